"""The viewer page in a real headless chromium (Debian's chromium and chromium-driver, driven by selenium;
scripts/browser-setup.sh installs them). Run with: pytest -m browser tests/report/viewer."""

import json
import shutil

import pytest

from logicpipe.solvers.lp import goal_tree_lines
from tests.conftest import cli
from tests.report.viewer.conftest import INJECTED_ID, INJECTED_LINE, INJECTION
from tests.report.viewer.pages import records

pytestmark = pytest.mark.browser

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")
if not (CHROMIUM and DRIVER):
    pytest.skip("chromium and chromium-driver are not installed (run scripts/browser-setup.sh)",
                allow_module_level=True)
webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed (run scripts/browser-setup.sh)")
from selenium.common.exceptions import NoAlertPresentException  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import Select  # noqa: E402


@pytest.fixture(scope="module")
def page(viewer_run, data_dir, tmp_path_factory):
    target = tmp_path_factory.mktemp("page") / "report.html"
    done = cli("view", str(viewer_run), "--out", str(target), "--data-dir", str(data_dir))
    assert done.returncode == 0, done.stderr
    return target


@pytest.fixture(scope="module")
def browser():
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1500,1000"):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(options=options, service=webdriver.ChromeService(executable_path=DRIVER))
    yield driver
    driver.quit()


@pytest.fixture
def opened(browser, page):
    browser.get(page.as_uri())
    browser.get_log("browser")  # start each test with an empty console
    return browser


def rows(driver):
    return driver.find_elements(By.CSS_SELECTOR, "#problem-table tbody tr")


def row_ids(driver):
    return [row.find_element(By.CSS_SELECTOR, "td.id").text for row in rows(driver)]


def open_problem(driver, problem_id):
    Select(driver.find_element(By.ID, "f-dataset")).select_by_value("")
    search = driver.find_element(By.ID, "f-search")
    search.clear()
    search.send_keys(problem_id)
    match = [row for row in rows(driver) if row.find_element(By.CSS_SELECTOR, "td.id").text == problem_id]
    match[0].click()
    return driver.find_element(By.ID, "detail")


def assert_no_alert(driver):
    with pytest.raises(NoAlertPresentException):
        driver.switch_to.alert.text  # noqa: B018 - reading it is what raises when there is none


def test_page_loads_with_no_console_errors(browser, page, tmp_path):
    browser.get(page.as_uri())
    errors = [entry for entry in browser.get_log("browser") if entry["level"] in ("SEVERE", "WARNING")]
    assert errors == []
    assert len(rows(browser)) == 50
    assert browser.find_element(By.ID, "count").text == "50 of 50 problems"
    assert_no_alert(browser)
    shot = tmp_path / "viewer.png"
    assert browser.save_screenshot(str(shot)) and shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_filters_narrow_the_table(opened, viewer_run):
    evaluated = records(viewer_run / "ar-lsat" / "evaluate.jsonl")
    Select(opened.find_element(By.ID, "f-dataset")).select_by_value("ar-lsat")
    assert row_ids(opened) == [r["id"] for r in evaluated]
    Select(opened.find_element(By.ID, "f-category")).select_by_value("parse")
    assert row_ids(opened) == [r["id"] for r in evaluated if r["error"] and r["error"]["category"] == "parse"]
    Select(opened.find_element(By.ID, "f-outcome")).select_by_value("correct")
    assert row_ids(opened) == [r["id"] for r in evaluated
                               if r["error"] and r["error"]["category"] == "parse" and r["correct"]]
    for select in ("f-dataset", "f-category", "f-outcome"):
        Select(opened.find_element(By.ID, select)).select_by_value("")
    Select(opened.find_element(By.ID, "f-rounds")).select_by_value("1")
    assert row_ids(opened) == [INJECTED_ID]
    assert opened.find_element(By.ID, "count").text == "1 of 50 problems"


def test_drill_down_shows_the_goal_tree(opened, viewer_run):
    solved = records(viewer_run / "prontoqa" / "solve.jsonl")[1]
    tree = solved["explanation"]["goal_tree"]
    detail = open_problem(opened, solved["id"])
    nodes = detail.find_elements(By.CSS_SELECTOR, ".goal-tree details.goal-node")

    # The page expands the flat node table exactly as the text renderer does, line for node.
    lines = goal_tree_lines(solved["explanation"])
    assert len(nodes) == len(lines) > 1
    top = nodes[0].find_element(By.TAG_NAME, "summary").text
    assert tree["nodes"][0]["goal"] in top and tree["nodes"][0]["by"] in top
    assert nodes[-1].find_element(By.TAG_NAME, "summary").text.startswith(lines[-1][1].split("  (")[0])
    # Collapsible: closing the root hides the rest of the tree.
    nodes[0].find_element(By.TAG_NAME, "summary").click()
    assert not nodes[1].is_displayed()


def test_drill_down_marks_the_error_line_and_shows_model_text_as_text(opened):
    detail = open_problem(opened, INJECTED_ID)
    first = detail.find_element(By.CSS_SELECTOR, "details.round[data-round='0']")
    first.find_element(By.TAG_NAME, "summary").click()
    marked = first.find_elements(By.CSS_SELECTOR, ".error-line")
    assert len(marked) == 1 and marked[0].get_attribute("data-line") == str(INJECTED_LINE)
    assert INJECTION in marked[0].text
    removed = detail.find_elements(By.CSS_SELECTOR, "details.round[data-round='1'] pre.diff .del")
    assert [line.text for line in removed] == ["-" + INJECTION]
    assert opened.execute_script("return document.scripts.length") == 2
    assert_no_alert(opened)


def test_unknown_explanation_shapes_render_as_trees(browser, viewer_run, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(viewer_run / "prontoqa", run / "prontoqa")
    solve = records(run / "prontoqa" / "solve.jsonl")
    # A goal tree in another shape (premises instead of children, a dict for the rule), a nested
    # unknown shape, and explanations that are not objects at all.
    solve[1]["explanation"] = {"goal_tree": {"goal": "Sour(Max, False)", "rule": {"head": "Sour", "line": 7},
                                             "premises": [{"goal": "Tumpus(Max, True)", "fact": True}]}}
    solve[2]["explanation"] = {"steps": [[1, [2, {"deep": None}]], {"note": "<b>bold</b>"}]}
    solve[3]["explanation"] = ["a", "list"]
    solve[4]["explanation"] = "just text"
    (run / "prontoqa" / "solve.jsonl").write_text("".join(json.dumps(r) + "\n" for r in solve))
    page = tmp_path / "page.html"
    assert cli("view", str(run), "--out", str(page)).returncode == 0
    browser.get(page.as_uri())
    for record in solve[1:5]:
        detail = open_problem(browser, record["id"])
        assert record["id"] in detail.find_element(By.TAG_NAME, "h3").text
    detail = open_problem(browser, solve[1]["id"])
    nodes = detail.find_elements(By.CSS_SELECTOR, ".goal-tree details.goal-node")
    assert [n.find_element(By.CSS_SELECTOR, ".goal").text for n in nodes] == ["Sour(Max, False)", "Tumpus(Max, True)"]
    assert "head: Sour" in nodes[0].text and "fact: true" in nodes[1].text
    detail = open_problem(browser, solve[2]["id"])
    assert "note: <b>bold</b>" in detail.text and not detail.find_elements(By.TAG_NAME, "b")
    assert [e for e in browser.get_log("browser") if e["level"] in ("SEVERE", "WARNING")] == []
