"""The band rule (docs/statistics.md section 4) over every claims file: a claim's own band
only where its sentence states a number; size words never carry one."""

from __future__ import annotations

import csv
import re
from pathlib import Path

import pytest

from ipclab.paths import PUBLISHED_DIR
from ipclab.published import PublishedDataError, claims

FILES = sorted(Path(PUBLISHED_DIR).glob("*_claims.csv"))
NUMBER = re.compile(r"\d+(?:[.,]\d+)?")


def _rows() -> list[tuple[str, dict[str, str]]]:
    return [(f.name, r) for f in FILES for r in csv.DictReader(f.open(encoding="utf-8"))]


def test_there_are_claims_files_of_every_study() -> None:
    from ipclab.studies import all_studies

    assert len(FILES) >= len(all_studies())


ROWS = _rows()


@pytest.mark.parametrize(("name", "row"), ROWS, ids=[f"{n}:{r['claim_id']}" for n, r in ROWS])
def test_an_own_band_only_where_the_sentence_states_its_number(
    name: str, row: dict[str, str]
) -> None:
    if not (row["band_low"] or row["band_high"]):
        return
    where = f"{name} {row['claim_id']}"
    assert row["test"] in ("ratio", "equal", "differ"), f"{where}: a {row['test']} has no band"
    assert not row.get("magnitude"), f"{where}: a size word takes its standard band"
    numbers = NUMBER.findall(row["published_value"])
    assert numbers, f"{where}: an own band without a stated number (published_value)"
    quote = row["quote"].replace(",", "")
    for n in numbers:
        assert n.replace(",", "") in quote, f"{where}: {n} is not in the quote"


def _write(path: Path, header: list[str], row: dict[str, str]) -> None:
    with path.open("w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, header)
        w.writeheader()
        w.writerow(row)


def test_the_loader_refuses_a_band_without_a_stated_number(tmp_path: Path) -> None:
    src = FILES[0].read_text(encoding="utf-8").splitlines()
    header = next(csv.reader([src[0]]))
    row = dict.fromkeys(header, "")
    row.update(claim_id="X01a", statement_id="X01", document="thesis", section="1", page="1",
               quote="A is about the same as B.", scope="performance", metric="rps",
               test="equal", relation="=", a_style="a", a_users="1", b_style="b", b_users="1",
               band_low="0.95", band_high="1.05")  # fmt: skip
    path = tmp_path / "x_claims.csv"
    _write(path, header, row)
    with pytest.raises(PublishedDataError, match="the number its sentence states"):
        claims(path, ("a", "b"))
    row.update(band_low="", band_high="", test="differ", relation="!=", magnitude="considerable")
    _write(path, header, row)
    assert claims(path, ("a", "b"))[0].band_low is None  # the standard band applies
    row.update(band_low="0.8", band_high="1.25", published_value="1")
    _write(path, header, row)
    with pytest.raises(PublishedDataError, match="standard band"):
        claims(path, ("a", "b"))
