"""The README's quick start, as a newcomer types it: the connector started the way
scripts/run.sh starts it (embedded defaults, a fresh data directory, the default callback
allowlist), then the README's example commands, extracted from the README itself and run
as written; only the port differs, since tests never bind a fixed one."""
import json
import pathlib
import re
import shlex
import subprocess

from conftest import Process

ROOT = pathlib.Path(__file__).resolve().parents[2]
MARKER = "<!-- quick-start-example -->"


def readme_example():
    text = (ROOT / "README.md").read_text()
    after = text[text.index(MARKER) + len(MARKER):]
    block = re.match(r"\s*```sh\n(.*?)```", after, re.S)
    assert block, "the quick-start example must be the sh block right after the marker"
    return block.group(1)


def run_sh_serve_arguments():
    """What scripts/run.sh hands `idempay serve` besides the caller's own arguments."""
    line = [l for l in (ROOT / "scripts" / "run.sh").read_text().splitlines() if l.startswith("exec ")][-1]
    words = shlex.split(line)
    assert words[1:3] == ["build/idempay", "serve"], line
    return [w for w in words[3:] if w != "$@"]


def json_documents(text):
    decoder, docs, at = json.JSONDecoder(), [], 0
    while at < len(text):
        if text[at].isspace():
            at += 1
            continue
        doc, at = decoder.raw_decode(text, at)
        docs.append(doc)
    return docs


def test_the_quick_start_works_as_written(tmp_path):
    assert run_sh_serve_arguments() == [], "the quick start serves with the embedded defaults"
    # In a fresh directory (./data is created), with nothing configured but a free port.
    server = Process(["serve"], tmp_path / "serve.log", {"IDEMPAY_LISTEN": "127.0.0.1:0"},
                     cwd=tmp_path)
    try:
        script = readme_example().replace("localhost:8080", f"localhost:{server.port}")
        done = subprocess.run(["bash", "-euo", "pipefail", "-c", script], cwd=tmp_path, capture_output=True,
                              text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        manifest, payment = json_documents(done.stdout)
        assert "Visa" in [m["name"] for m in manifest["paymentMethods"]]
        assert payment["status"] == "approved", payment
    finally:
        server.terminate()
    assert (tmp_path / "data" / "dev-credentials.json").exists()


def packages(profile):
    out = subprocess.run([str(ROOT / "scripts" / "install-deps.sh"), profile, "--print"], capture_output=True,
                         text=True, check=True)
    return out.stdout.split()


def test_the_quick_start_installs_what_serving_needs_and_no_test_tools():
    run_sh = (ROOT / "scripts" / "run.sh").read_text()
    assert "scripts/install-deps.sh build\n" in run_sh
    assert "scripts/install-deps.sh test\n" in (ROOT / "scripts" / "test.sh").read_text()
    build, test = packages("build"), packages("test")
    for tool in ["chromium", "chromium-driver", "nginx-light", "wrk", "haproxy", "postgresql", "spin", "clang",
                 "libgtest-dev", "python3-pytest"]:
        assert tool not in build and tool in test, tool
    # The quick start's own commands use curl and python3.
    assert {"g++", "cmake", "librocksdb-dev", "libcaf-dev", "curl", "python3"} <= set(build)
    assert set(build) <= set(test)
