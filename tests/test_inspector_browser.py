"""The inspector in a real browser: `python run.py` with a scripted model and `ui=true`, driven through
headless Chromium (Debian's chromium and chromedriver, which .ci/run installs) with Selenium. Each page
is checked for the records the agent made, and a screenshot of each is saved under artifacts/inspector/.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import free_port

ROOT = Path(__file__).resolve().parents[1]
SHOTS = ROOT / "artifacts" / "inspector"
CHROMIUM, DRIVER = shutil.which("chromium") or "/usr/bin/chromium", shutil.which("chromedriver") or "/usr/bin/chromedriver"
TOKEN = "browser-test-token"
SCRIPT = ["remember the spare key is under the blue flowerpot",
          "remember (--> sam human) (stv 1 0.9)\nremember (--> human mortal) (stv 1 0.9)",
          "infer is sam mortal?",
          "dream"]
MESSAGES = ["the spare key is under the blue flowerpot, remember that", "sam is a human and humans are mortal",
            "so is sam mortal?", "time to consolidate"]


def browser():
    if not (Path(CHROMIUM).exists() and Path(DRIVER).exists()):
        pytest.skip(f"no browser here ({CHROMIUM} and {DRIVER} are installed by .ci/run: apt-get install chromium "
                    "chromium-driver)")
    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed (pip install -e '.[dev]')")
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-quic",
                 "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--window-size=1280,1000"):
        options.add_argument(flag)
    return webdriver.Chrome(service=Service(DRIVER), options=options)


def wait_until(check, what: str, timeout: float = 60.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        found = check()
        if found:
            return found
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.mark.slow
def test_the_inspector_in_a_real_browser(tmp_path) -> None:
    from selenium.webdriver.common.by import By

    driver = browser()
    SHOTS.mkdir(parents=True, exist_ok=True)
    script = tmp_path / "script.txt"
    script.write_text("\n---\n".join(SCRIPT))
    port = free_port()
    env = {**os.environ, "INSPECTOR_TOKEN": TOKEN, "PYTHONUNBUFFERED": "1", "HF_HUB_OFFLINE": "1"}
    agent = subprocess.Popen(
        [sys.executable, "run.py", "provider=scripted", f"scriptFile={script}", "ui=true", f"uiPort={port}",
         "uiReadOnly=false", f"memoryDir={tmp_path / 'memory'}", "embeddingprovider=hash", "sleepInterval=0",
         f"knowledgePriorsDir={tmp_path / 'none'}", "sessionEndDream=0"],
        cwd=ROOT, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    base = f"http://127.0.0.1:{port}"

    def page(path: str, shot: str) -> str:
        driver.get(base + path)
        driver.save_screenshot(str(SHOTS / f"{shot}.png"))
        return driver.find_element(By.TAG_NAME, "body").text

    try:
        printed = agent.stdout.readline() + agent.stdout.readline()
        wait_until(lambda: "inspector:" in printed or agent.poll() is not None, "the inspector's address")
        for line in MESSAGES:
            agent.stdin.write(line + "\n")
            agent.stdin.flush()
        turns = tmp_path / "memory" / "turns.jsonl"
        wait_until(lambda: turns.exists() and len(turns.read_text().splitlines()) >= len(MESSAGES), "four turns")

        driver.get(f"{base}/stats")
        assert "Token needed" in driver.find_element(By.TAG_NAME, "body").text  # no token, no page
        driver.get(f"{base}/?token={TOKEN}")  # once: from then on a cookie
        assert driver.current_url == base + "/"
        driver.find_element(By.CSS_SELECTOR, "details.turn summary").click()
        driver.save_screenshot(str(SHOTS / "timeline.png"))
        text = driver.find_element(By.TAG_NAME, "body").text
        assert "the spare key is under the blue flowerpot, remember that" in text and "the model was shown" in text

        driver.get(f"{base}/search")
        box = driver.find_element(By.NAME, "q")
        box.send_keys("where is the spare key")
        box.submit()
        wait_until(lambda: driver.find_elements(By.CSS_SELECTOR, ".hit"), "search hits")
        driver.save_screenshot(str(SHOTS / "search.png"))
        first = driver.find_element(By.CSS_SELECTOR, ".hit")
        assert "blue flowerpot" in first.text and "bm25" in first.text
        first.find_element(By.TAG_NAME, "a").click()
        wait_until(lambda: driver.find_elements(By.ID, "content"), "the record page")
        assert "blue flowerpot" in driver.find_element(By.ID, "content").text
        driver.save_screenshot(str(SHOTS / "record.png"))

        text = page("/beliefs", "beliefs")
        assert "(--> sam human)" in text and "deduction" in text and "(--> sam mortal)" in text
        driver.find_element(By.CSS_SELECTOR, ".inferred a").click()
        image = wait_until(lambda: driver.find_elements(By.ID, "graph"), "the graph picture")[0]
        wait_until(lambda: driver.execute_script("return arguments[0].complete && arguments[0].naturalWidth", image),
                   "the picture to load")
        assert "DERIVED_FROM" in driver.find_element(By.ID, "links").text
        assert "agent_inference" in driver.find_element(By.ID, "content").text
        driver.execute_script("arguments[0].scrollIntoView()", image)
        driver.save_screenshot(str(SHOTS / "graph.png"))

        text = wait_until(lambda: (lambda t: t if "added" in t else None)(page("/dreams", "dreams")), "a dream report")
        assert "episodes" in text
        text = page("/stats", "stats")
        assert "semantic records" in text and "memory index rows" in text

        driver.get(f"{base}/search?q=spare+key+flowerpot")
        target = driver.find_element(By.CSS_SELECTOR, ".hit a").text
        driver.get(f"{base}/record/{target}")
        driver.find_element(By.ID, "forget").click()
        assert "cannot be undone" in driver.find_element(By.TAG_NAME, "body").text  # asked first
        driver.save_screenshot(str(SHOTS / "forget.png"))
        driver.find_element(By.ID, "confirm").click()
        assert target in wait_until(lambda: driver.find_elements(By.ID, "gone"), "the forgotten page")[0].text
        driver.get(f"{base}/record/{target}")
        assert "no record" in driver.find_element(By.TAG_NAME, "body").text
    finally:
        driver.quit()
        if agent.poll() is None:
            agent.stdin.close()
            try:
                agent.wait(timeout=30)
            except subprocess.TimeoutExpired:
                agent.kill()
    assert agent.returncode == 0, agent.stderr.read()
