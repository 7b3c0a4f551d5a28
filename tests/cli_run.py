"""Running the command line in-process for the CLI tests: exit code, stdout and stderr."""

from pathlib import Path

from perfmodel.cli import main

ROOT = Path(__file__).resolve().parent.parent
RCV1 = ROOT / "data" / "ernest" / "rcv1.csv"


def run(args, capsys):
    code = main([str(a) for a in args])
    out = capsys.readouterr()
    return code, out.out, out.err
