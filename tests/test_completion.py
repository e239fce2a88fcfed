"""`nvcre completion bash|zsh`: the script is generated from the parser, and bash completes with it as a user's
shell would (the function is called with COMP_WORDS/COMP_CWORD set, as bash's `complete -F` does)."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from nvcre_hera.cli import build_parser, main
from nvcre_hera.completion import command_table


def _script(shell: str, capsys: pytest.CaptureFixture) -> str:
    assert main(["completion", shell]) == 0
    return capsys.readouterr().out


def _complete(script: str, words: list[str]) -> list[str]:
    """COMPREPLY for the last word of `words` (the word being completed)."""
    words_arr = " ".join("''" if not w else w for w in words)
    probe = f'{script}\nCOMP_WORDS=({words_arr}); COMP_CWORD={len(words) - 1}; _nvcre; printf "%s\\n" "${{COMPREPLY[@]}}"'
    out = subprocess.run(["bash", "--norc", "--noprofile", "-c", probe], capture_output=True, text=True, check=True,
                         timeout=30).stdout
    return [w for w in out.splitlines() if w]


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash is not installed")
def test_bash_completes_commands_flags_and_choices(capsys: pytest.CaptureFixture, tmp_path) -> None:
    script = _script("bash", capsys)
    assert _complete(script, ["nvcre", "rep"]) == ["report"]
    assert sorted(_complete(script, ["nvcre", "report", "--format", ""])) == ["ctrf", "html", "json", "junit", "text"]
    assert sorted(_complete(script, ["nvcre", "parse", ""])) == ["dcgm", "nccl", "training"]
    assert sorted(_complete(script, ["nvcre", "submit", "x.yaml", "--wa"])) == ["--wait", "--wait-timeout", "--watch"]
    assert _complete(script, ["nvcre", "certify", "x.yaml", "--progress", "j"]) == ["json"]
    assert "completion" in _complete(script, ["nvcre", ""])


def test_the_table_follows_the_parser() -> None:
    table = command_table(build_parser())
    assert set(table) == {"certify", "compile", "validate", "jobs", "submit", "parse", "report", "catalog", "bench",
                          "completion", "baseline"}
    assert "--fraction" in table["baseline"]["flags"] and "--baseline" in table["certify"]["flags"]
    assert table["completion"]["positional"] == ["bash", "zsh"]
    assert "--watch" in table["submit"]["flags"] and table["submit"]["choices"]["--as"] == ["workflow", "template",
                                                                                           "cron"]


def test_zsh_uses_the_bash_function_through_bashcompinit(capsys: pytest.CaptureFixture) -> None:
    script = _script("zsh", capsys)
    assert "bashcompinit" in script and "complete -o filenames -F _nvcre nvcre" in script
    if shutil.which("zsh"):
        subprocess.run(["zsh", "-n", "-c", script], check=True, timeout=30)


def test_unknown_shell_is_bad_input(capsys: pytest.CaptureFixture) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["completion", "fish"])
    assert exc.value.code == 2 and "invalid choice: 'fish'" in capsys.readouterr().err
