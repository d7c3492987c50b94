"""Shared fixtures: a project folder (config, catalogue, snapshot) in a temp dir, and the CLI runner."""

from __future__ import annotations

import os
import shutil
import tempfile
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

from zotsync.cli import main

# zotsync's cache (the tokenizer's compact form) goes to a folder of this run, never the user's own
# (platformdirs reads XDG_CACHE_HOME on Linux; the commands the tests start inherit it).
os.environ["XDG_CACHE_HOME"] = tempfile.mkdtemp(prefix="zotsync-tests-cache-")

ROOT = Path(__file__).resolve().parent.parent
SEEDS = ROOT / "seeds"


# Tests that drive a browser, build the wheel or run an external checker are `slow`, whatever module they
# are in (the others that run a subprocess are marked where they are): `pytest -m "not slow"` is the quick
# loop while working; CI runs everything.
SLOW_FIXTURES = frozenset({"browser", "built_wheel", "biber", "vnu", "axe_source"})


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if SLOW_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)


@pytest.fixture
def run(capsys: pytest.CaptureFixture[str]) -> Callable[..., Run]:
    """Run the real `zotsync` entry point in-process and capture what a user would see."""

    def invoke(*args: str) -> Run:
        code = main(list(args))
        captured = capsys.readouterr()
        return Run(code, captured.out, captured.err)

    return invoke


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A copy of the bundled default: config/, seeds/, exports/ in a temp folder."""
    shutil.copytree(ROOT / "config", tmp_path / "config")
    shutil.copytree(SEEDS, tmp_path / "seeds")
    (tmp_path / "exports").mkdir()
    return tmp_path


def write_config(folder: Path, body: str) -> Path:
    path = folder / "zotsync.yaml"
    path.write_text(textwrap.dedent(body), encoding="utf-8")
    return path


# -- the fake Zotero Web API (tests/zotero_server.py) for the web source's tests ---------------------------
from collections.abc import Iterator  # noqa: E402  (an appended section)

import zotero_server  # noqa: E402  (the server module lives beside this file)
from factories import ZOTERO_API_KEY, FakeClock, Run  # noqa: E402


@pytest.fixture
def zotero_api() -> Iterator[Callable[..., zotero_server.ZoteroServer]]:
    """Start fake Zotero API servers on 127.0.0.1 (random ports), stopped after the test:
    `zotero_api(FakeLibrary.from_snapshot(objects))`, readable with ZOTERO_API_KEY unless `keys` says else.
    """
    started: list[zotero_server.ZoteroServer] = []

    def start(*libraries: zotero_server.FakeLibrary, keys=None) -> zotero_server.ZoteroServer:
        server = zotero_server.ZoteroServer(*libraries, keys={ZOTERO_API_KEY: None} if keys is None else keys)
        started.append(server.start())
        return server

    yield start
    for server in started:
        server.stop()


@pytest.fixture
def fake_time(monkeypatch: pytest.MonkeyPatch) -> FakeClock:
    """Every request policy and fake server of the test on one fake clock: backoffs, Retry-After,
    Backoff, dripping bodies and deadlines take no real time, and the servers stamp requests in the
    same fake seconds (zotsync's retries run on real time in `test_web_streaming.py`'s given-up tests)."""
    import zotsync.net.policy

    clock = FakeClock()
    monkeypatch.setattr(zotsync.net.policy, "REAL_CLOCK", clock)
    monkeypatch.setattr(zotero_server.ZoteroServer, "clock", clock)
    return clock


# -- the repository as a clean clone has it, and the wheel built from it (built once per run) -----------
import fnmatch  # noqa: E402
import importlib.util  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402


def clean_copy(target: Path, root: Path = ROOT) -> Path:
    """The repository as a fresh clone has it: the files git tracks, or, outside git (an archive, a
    download), the tree without what `.gitignore` keeps out — the virtual environment, the store, the
    exports and build output a run of the quick start leaves behind."""
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=root, capture_output=True, timeout=60)
    if listed.returncode == 0 and listed.stdout:
        names = [name for name in listed.stdout.decode().split("\0") if name and (root / name).is_file()]
    else:
        names = not_ignored(root)
    for name in names:
        (target / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(root / name, target / name)
    return target


def not_ignored(root: Path) -> list[str]:
    """The files under `root` that its `.gitignore` does not exclude, as git reads the rules this
    repository uses: `*`, `?` and `[…]`; a leading `!` takes a file back; a trailing `/` names folders;
    a pattern with a `/` in it is anchored at the root, one without matches a name at any depth; the
    last rule that matches wins, and nothing inside an excluded folder comes back."""
    rules = []
    for line in (root / ".gitignore").read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        keep, line = line.startswith("!"), line.removeprefix("!")
        folders_only, line = line.endswith("/"), line.rstrip("/")
        rules.append((keep, folders_only, "/" in line, line.lstrip("/")))

    def ignored(relative: str, is_folder: bool) -> bool:
        verdict = False
        for keep, folders_only, anchored, pattern in rules:
            if folders_only and not is_folder:
                continue
            subject = relative if anchored else relative.rsplit("/", 1)[-1]
            if fnmatch.fnmatchcase(subject, pattern):
                verdict = not keep
        return verdict

    found = []
    for folder, folders, files in os.walk(root):
        here = Path(folder).relative_to(root).as_posix()
        prefix = "" if here == "." else here + "/"
        folders[:] = sorted(d for d in folders if d != ".git" and not ignored(prefix + d, True))
        found += [prefix + f for f in sorted(files) if f != ".git" and not ignored(prefix + f, False)]
    return found


@pytest.fixture(scope="session")
def built_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel a user would install, built from a clean copy of the repository."""
    if importlib.util.find_spec("setuptools") is None:
        pytest.skip("setuptools is not installed (.[test])")
    source = clean_copy(tmp_path_factory.mktemp("src"))
    out = tmp_path_factory.mktemp("wheel")
    # No build isolation: the test extras bring the build backend, so no registry is reached.
    built = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(out),
            ".",
        ],
        cwd=source,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert built.returncode == 0, built.stderr
    (path,) = out.glob("zotsync-*.whl")
    return path


# -- a folder nobody may write in, for the failures of files zotsync makes (tests/test_file_failures.py) ---
import errno  # noqa: E402

# chmod 555 refuses with EACCES; for root, who ignores modes, the immutable attribute refuses with EPERM.
READ_ONLY_REASON = os.strerror(errno.EPERM if hasattr(os, "geteuid") and os.geteuid() == 0 else errno.EACCES)


@pytest.fixture
def read_only(tmp_path: Path) -> Iterator[Path]:
    """A folder nobody may write in, root included (chmod, and for root the immutable attribute)."""
    if sys.platform == "win32":  # a folder's read-only attribute does not stop writes there
        pytest.skip("Windows has no read-only folders")
    folder = tmp_path / "read-only"
    folder.mkdir()
    folder.chmod(0o555)
    immutable = False
    if os.access(folder, os.W_OK):  # root ignores the mode
        chattr = shutil.which("chattr")
        immutable = (
            bool(chattr) and subprocess.run([chattr, "+i", str(folder)], capture_output=True).returncode == 0
        )
        if not immutable:
            folder.chmod(0o755)
            pytest.skip("running as root where no folder can be made read-only")
    try:
        yield folder
    finally:
        if immutable:
            subprocess.run(["chattr", "-i", str(folder)], check=True)
        folder.chmod(0o755)


# -- a real browser (Debian's chromium, driven by Playwright) for pages as their readers see them ---------
import shutil as _shutil  # noqa: E402

CHROMIUM = _shutil.which("chromium") or _shutil.which("chromium-browser")
# .ci/run installs chromium and sets this: there, a missing browser fails the browser tests; elsewhere
# (a clone without it) they skip.
BROWSER_REQUIRED = os.environ.get("ZOTSYNC_BROWSER_TESTS") == "required"


@pytest.fixture(scope="session")
def browser():
    """A headless Chromium for the session (Playwright's `Browser`): `browser.new_page()` per test."""
    if CHROMIUM is None:
        if BROWSER_REQUIRED:
            pytest.fail("no chromium on PATH, and ZOTSYNC_BROWSER_TESTS=required")
        pytest.skip("no chromium on PATH (Debian: apt install chromium)")
    playwright_api = pytest.importorskip("playwright.sync_api")
    with playwright_api.sync_playwright() as driver:
        # Without the background-networking flags Chromium tries hosts this machine cannot reach.
        flags = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-sync"]
        flags += ["--disable-component-update", "--no-first-run", "--disable-quic"]
        launched = driver.chromium.launch(executable_path=CHROMIUM, args=flags)
        yield launched
        launched.close()


# -- the checkers of what zotsync publishes: biber (Debian's), the Nu HTML Checker and axe-core (npm) ------
# .ci/run installs them (apt, and `npm ci` in tests/tools) and sets ZOTSYNC_CHECKERS=required: there a
# missing checker fails its tests; elsewhere they skip.
CHECKERS_REQUIRED = os.environ.get("ZOTSYNC_CHECKERS") == "required"
TOOLS = ROOT / "tests" / "tools" / "node_modules"


def _checker(path: Path | None, what: str) -> Path:
    if path is None or not path.exists():
        if CHECKERS_REQUIRED:
            pytest.fail(f"{what} is missing, and ZOTSYNC_CHECKERS=required")
        pytest.skip(f"{what} is missing (.ci/run installs it)")
    return path


@pytest.fixture(scope="session")
def biber() -> Path:
    """biber, which reads a .bib file as biblatex users' documents do (`biber --tool`)."""
    found = _shutil.which("biber")
    return _checker(Path(found) if found else None, "biber (Debian: apt install biber)")


@pytest.fixture(scope="session")
def vnu() -> list[str]:
    """The Nu HTML Checker (vnu.jar, from npm's vnu-jar), as a command to run."""
    java = _shutil.which("java")
    _checker(Path(java) if java else None, "java")
    jar = _checker(TOOLS / "vnu-jar" / "build" / "dist" / "vnu.jar", "vnu.jar (npm ci in tests/tools)")
    return [str(java), "-jar", str(jar)]


@pytest.fixture(scope="session")
def axe_source() -> str:
    """axe-core's rules, to run in the page (npm's axe-core)."""
    path = _checker(TOOLS / "axe-core" / "axe.min.js", "axe-core (npm ci in tests/tools)")
    return path.read_text(encoding="utf-8")


# -- fake scholarly metadata services (tests/metadata_server.py) for enrichment's tests ------------------
import metadata_server  # noqa: E402


@pytest.fixture
def metadata_api(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., metadata_server.MetadataServer]]:
    """Start fake metadata services on 127.0.0.1, stopped after the test:
    `metadata_api(Paper(...), ...)`; `server.endpoints()` is what `enrich.endpoints` takes."""
    started: list[metadata_server.MetadataServer] = []

    def start(*papers: metadata_server.Paper, **options: object) -> metadata_server.MetadataServer:
        server = metadata_server.MetadataServer(papers, **options)  # type: ignore[arg-type]
        started.append(server.start())
        return server

    yield start
    for server in started:
        server.stop()
