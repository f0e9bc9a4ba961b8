"""The viewer in a real browser: headless Chromium (Debian's chromium + chromium-driver) loads the
page the viser server serves; pixels of its screenshots are checked where the client's own camera
(reported back to the server) projects the scene's objects. Skipped, with the reason, when Chromium,
chromedriver, selenium or viser is missing.

With POLYPHYS_DOCS_IMAGES=1 the screenshots are also written to docs/images/ (docs/viewer.md).
"""

from __future__ import annotations

import os
import threading
import time

import numpy as np
import pytest
from viewer_browser import Browser, chromium_or_skip
from viewer_scenes import run_scene, write_scene

DOCS_IMAGES = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "images")


def _save(browser, name):
    if os.environ.get("POLYPHYS_DOCS_IMAGES") == "1":
        os.makedirs(DOCS_IMAGES, exist_ok=True)
        browser.save(os.path.join(DOCS_IMAGES, name))


def _client_camera(viewer):
    (client,) = viewer.server.get_clients().values()
    return client.camera


def project(cam, pts) -> np.ndarray:
    """Pixel (u, v) of world points through the browser's camera: viser reports the camera pose as
    an OpenCV frame (x right, y down, z forward), fov = vertical field of view (rad)."""
    w, x, y, z = (float(v) for v in cam.wxyz)
    R = np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                  [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                  [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])
    pc = (np.asarray(pts, float) - np.asarray(cam.position, float)) @ R       # camera coordinates
    f = 0.5 * cam.image_height / np.tan(0.5 * cam.fov)
    return np.stack([0.5 * cam.image_width + f * pc[:, 0] / pc[:, 2],
                     0.5 * cam.image_height + f * pc[:, 1] / pc[:, 2]], axis=1)


def patch(img, uv, r=3) -> np.ndarray:
    u, v = int(round(uv[0])), int(round(uv[1]))
    return np.median(img[max(v - r, 0):v + r + 1, max(u - r, 0):u + r + 1].reshape(-1, 3), axis=0)


def dominant(rgb, channel: int, margin: float = 40.0) -> bool:
    """The colour's ``channel`` exceeds both others by ``margin`` (shading keeps the hue)."""
    others = [rgb[c] for c in range(3) if c != channel]
    return all(rgb[channel] > o + margin for o in others)


def _dismiss_notifications(browser):
    from selenium.webdriver.common.by import By

    for b in browser.driver.find_elements(By.CSS_SELECTOR, ".mantine-Notification-closeButton, "
                                                           "button[class*='Notification'][class*='close']"):
        try:
            b.click()
        except Exception:  # noqa: BLE001 - a notification that already went away
            pass


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    chromium_or_skip()
    return run_scene(tmp_path_factory.mktemp("browser"), steps=40, every=10)


def _box_center(viewer, k, env):
    """World centre of the box geom (the box body is the third body: floor, platform, box)."""
    from polyphys.viewer.content import geom_world_poses

    f = viewer.recording.frame(k)
    gp, _ = geom_world_poses(f["b2.pos"][env:env + 1], f["b2.quat"][env:env + 1], viewer.content.bodies[2].geoms)
    return gp[0, 0]


def test_replay_in_chromium_slider_and_env_selector(recorded):
    from polyphys import viewer as pv
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    v = pv.replay(recorded.out_dir, port=0, shadows=False)   # software WebGL: shadows cost seconds a frame
    b = Browser(800, 520)
    try:
        b.open(v.url, v.server)
        time.sleep(1.0)
        _dismiss_notifications(b)
        img0 = b.wait_stable()
        _save(b, "viewer_replay.png")
        cam = _client_camera(v)
        assert (cam.image_width, cam.image_height) == (800, 520)
        # the red box where the camera projects it (record 0, env 0)
        uv_box = project(cam, [_box_center(v, 0, 0)])[0]
        assert 0 <= uv_box[0] < 800 and 0 <= uv_box[1] < 520
        assert dominant(patch(img0, uv_box), 0), patch(img0, uv_box)
        # the blue particles: most of the jelly's projected particles are blue-dominant pixels
        pts = v.recording.frame(0)["p0.pos"][0]
        uv = project(cam, pts[np.linspace(0, len(pts) - 1, 40).astype(int)])
        blue = [dominant(img0[int(q[1]), int(q[0])], 2, 30) for q in uv]
        assert np.mean(blue) > 0.6, np.mean(blue)
        # the green floor: plane points around the scene, off the GUI panel (top right)
        ring = [(r * np.cos(a), r * np.sin(a), 0.0) for r in (0.45, 0.6) for a in np.linspace(0, 2 * np.pi, 12)]
        uvf = project(cam, ring)
        ok = [(0 <= q[0] < 800 and 0 <= q[1] < 520 and (q[0] < 440 or q[1] > 330)) for q in uvf]
        greens = [dominant(patch(img0, q), 1, 12) for q, o in zip(uvf, ok) if o]
        assert len(greens) >= 6 and np.mean(greens) > 0.8, greens

        # move the time slider in the page (keyboard on its thumb): the server shows the last record
        thumb = b.driver.find_elements(By.CSS_SELECTOR, "[role=slider]")[0]
        assert thumb.get_attribute("aria-valuemax") == str(v.recording.n_records - 1)
        thumb.send_keys(Keys.END)
        t0 = time.time()
        while v.record_index != v.recording.n_records - 1 and time.time() - t0 < 20:
            time.sleep(0.1)
        last = v.recording.n_records - 1
        assert v.record_index == last
        img1 = b.wait_stable()
        _save(b, "viewer_replay_last.png")
        assert np.abs(img1.astype(int) - img0.astype(int)).sum(axis=2).astype(bool).mean() > 0.002
        uv_box1 = project(cam, [_box_center(v, last, 0)])[0]
        assert np.linalg.norm(uv_box1 - uv_box) > 10          # the box fell in the picture
        assert dominant(patch(img1, uv_box1), 0), patch(img1, uv_box1)

        # the env selector (a combobox in the page): env 1, whose box was thrown sideways
        combo = [e for e in b.driver.find_elements(By.CSS_SELECTOR, "input[role=combobox]")
                 if e.get_attribute("value") == "0"][0]
        combo.click()
        opt = [o for o in b.driver.find_elements(By.CSS_SELECTOR, "[role=option]") if o.text.strip() == "1"][0]
        opt.click()
        t0 = time.time()
        while v.env != 1 and time.time() - t0 < 20:
            time.sleep(0.1)
        assert v.env == 1
        img2 = b.wait_stable()
        _save(b, "viewer_env1.png")
        uv_box2 = project(cam, [_box_center(v, last, 1)])[0]
        assert np.linalg.norm(uv_box2 - uv_box1) > 20
        assert dominant(patch(img2, uv_box2), 0), patch(img2, uv_box2)
        assert not dominant(patch(img2, uv_box1), 0)           # env 0's box is no longer drawn there
    finally:
        b.close()
        v.close()


@pytest.mark.validate
def test_live_mode_steps_while_the_page_watches(tmp_path):
    """Live mode in the browser (a second page load: ~35 s on the loaded 2-core machine, so validate;
    CI checks live mode server-side in test_viewer_api.py)."""
    from polyphys import run
    from polyphys import viewer as pv
    from selenium.webdriver.common.by import By

    chromium_or_skip()
    plan = run.parse_file(write_scene(tmp_path, steps=10))
    scene, _ = run.build_scene(plan)
    v = pv.live(scene, port=0, attach=False, color_by="vel", name=plan.name, shadows=False)
    b = Browser(800, 520)
    try:
        b.open(v.url, v.server)
        _dismiss_notifications(b)
        img0 = b.wait_stable()
        th = threading.Thread(target=v.run_live, kwargs={"steps": 60})
        th.start()
        th.join(timeout=300)
        assert not th.is_alive()
        assert int(scene.get_step_count()[0]) == 60
        img1 = b.wait_stable()
        _save(b, "viewer_live.png")
        assert not np.array_equal(img0, img1)
        # the grid of envs (the layout itself is checked server-side in test_viewer_api.py)
        v.set_grid(True)
        img2 = b.wait_stable()
        _save(b, "viewer_grid.png")
        assert not np.array_equal(img2, img1)
        text = b.driver.find_element(By.TAG_NAME, "body").text
        assert "live" in text and "steps/s" in text and "env-steps/s" in text, text
        assert v.step_rate > 0
    finally:
        b.close()
        v.close()


def test_port_in_use_takes_the_next_or_says_which(recorded):
    import socket

    from polyphys import viewer as pv
    from polyphys.errors import OptionError

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(1)
        busy = s.getsockname()[1]
        v = pv.replay(recorded.out_dir, port=busy)
        try:
            assert v.port != busy and v.port > busy
            assert v.port_note == f"port {busy} is in use; serving on port {v.port}"
        finally:
            v.close()
        with pytest.raises(OptionError, match=rf"port {busy} on 127.0.0.1 is in use"):
            pv.replay(recorded.out_dir, port=busy, strict_port=True)
    with pytest.raises(OptionError, match=r"colour by 'Jp': unknown field; fields recorded in this run"):
        pv.replay(recorded.out_dir, port=0, color_by="Jp")
