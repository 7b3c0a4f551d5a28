"""Running the command line in-process for the CLI tests: exit code, stdout and stderr."""

from pathlib import Path

from perfmodel.cli import main

ROOT = Path(__file__).resolve().parent.parent
RCV1 = ROOT / "data" / "ernest" / "rcv1.csv"


def run(args, capsys):
    code = main([str(a) for a in args])
    out = capsys.readouterr()
    return code, out.out, out.err


def one_line_error(code, err, fragment):
    """A clear error: exit code 2, one line ``error: ...`` naming ``fragment``, no traceback."""
    assert code == 2, err
    assert err.count("\n") == 1 and err.startswith("error: ") and "Traceback" not in err, err
    assert fragment in err, err


def fit_rcv1(path, *extra) -> Path:
    """``fit`` Ernest's rcv1 measurements with Ernest's terms (absolute loss) into ``path``."""
    code = main(
        [
            "fit",
            str(RCV1),
            "--time",
            "time_s",
            "--factor",
            "m=cores",
            "--factor",
            "s=input_fraction",
            "--terms",
            "1 + s/m + log(m) + m",
            "--loss",
            "absolute",
            *extra,
            "--out",
            str(path),
        ]
    )
    assert code == 0
    return path
