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
#: a ratio stated as a word (docs/statistics.md section 4): the word -> its number
NUMBER_WORDS = {"double": 2.0, "twice": 2.0, "triple": 3.0, "half": 0.5}


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
    word = row["published_value"].strip().lower()
    if word in NUMBER_WORDS:  # a number given as a word ("double"): its ratio, and the word
        assert row["published_ratio"] and float(row["published_ratio"]) == NUMBER_WORDS[word]
        assert re.search(rf"\b{word}\b", row["quote"], re.IGNORECASE), f"{where}: {word}?"
        return
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


# "about N": one rule (docs/statistics.md section 4, issue 47.3)
APPROXIMATE = re.compile(
    r"\b(?:about|approximately|around|roughly|nearly|almost)\s+"
    r"(?P<n>\d+(?:[.,]\d+)?|one|two|three|four|five|six|seven|eight|nine|ten)\b",
    re.IGNORECASE,
)
WORDS = {"one": "1", "two": "2", "three": "3", "four": "4", "five": "5", "six": "6",
         "seven": "7", "eight": "8", "nine": "9", "ten": "10"}  # fmt: skip


def _approximate(row: dict[str, str]) -> bool:
    """Whether the sentence gives the row's number as approximate ("about seven minutes")."""
    numbers = set(NUMBER.findall(row["published_value"].replace(",", "")))
    said = {
        WORDS.get(m.group("n").lower(), m.group("n")) for m in APPROXIMATE.finditer(row["quote"])
    }
    return bool(numbers & said)


def test_every_about_n_sentence_takes_the_standard_band() -> None:
    """T19d-f/P13d-f ("about seven minutes") and T20a/P15a ("about 20 seconds") are judged
    alike: the standard equivalence band, never an own one."""
    about = [(n, r) for n, r in ROWS if _approximate(r) and r["test"] in ("value", "equal")]
    assert {r["claim_id"] for _, r in about} >= {"T19d", "T19e", "P13d", "T20a", "P15a"}
    own = [f"{n}:{r['claim_id']}" for n, r in about if r["band_low"] or r["band_high"]]
    assert own == []
    from ipclab.claims import Rules, band_of
    from ipclab.studies.shafabakhsh import published

    by_id = {c.claim_id: c for c in published.claims()}
    for cid in ("T19d", "T19f", "T20a", "P15a"):
        assert band_of(by_id[cid], Rules()) == (0.8, 1.25), cid


def test_the_loader_refuses_an_own_band_on_an_approximate_number(tmp_path: Path) -> None:
    src = FILES[0].read_text(encoding="utf-8").splitlines()
    header = next(csv.reader([src[0]]))
    row = dict.fromkeys(header, "")
    row.update(claim_id="X01a", statement_id="X01", document="thesis", section="1", page="1",
               quote="Both took about 20 seconds.", scope="performance", metric="rps",
               test="equal", relation="=", a_style="a", a_users="1", b_style="b", b_users="1",
               published_value="20", band_low="0.85", band_high="1.15")  # fmt: skip
    path = tmp_path / "x_claims.csv"
    _write(path, header, row)
    with pytest.raises(PublishedDataError, match="approximate number"):
        claims(path, ("a", "b"))
    row.update(quote="Both took 20 seconds.")  # an exact number keeps its own band
    _write(path, header, row)
    assert claims(path, ("a", "b"))[0].band_low == 0.85
