"""The planner (ipclab.planner): the budget spent on the cheapest tests first, runs a cell
gets shared by every test of that cell, interleaved blocks in a fixed order."""

from __future__ import annotations

from ipclab.planner import Need, blocks, choose, describe


def _need(test: str, cells: tuple[str, ...], have: int, need: int | None, h: float = 0.1) -> Need:
    return Need("s", test, f"{test} compared", cells, have, need, h)


def test_cheapest_first_and_shared_cells_count_once() -> None:
    a = _need("A", ("x", "y"), 5, 8)  # 6 runs, 0.6 h
    b = _need("B", ("x", "z"), 5, 8)  # after A: z only, 0.3 h
    c = _need("C", ("u", "v"), 5, 25)  # 40 runs, 4 h
    plan = choose([c, b, a], budget_h=1.0)
    assert [n.test for n in plan.decided] == ["A", "B"]
    assert plan.extra == {"x": 3, "y": 3, "z": 3}
    assert abs(plan.hours - 0.9) < 1e-9 and plan.runs == 9
    assert [n.test for n in plan.left] == ["C"]


def test_undecidable_tests_are_never_planned() -> None:
    plan = choose([_need("D", ("x", "y"), 5, None), _need("E", ("x", "y"), 5, 40)], 100.0)
    assert not plan.decided and plan.runs == 0
    text = describe(plan)
    assert "not planned: s D" in text and "more than 25" in text


def test_blocks_interleave_and_keep_their_order() -> None:
    order = blocks({"x": 2, "y": 1, "z": 2}, {"x": 5, "y": 5, "z": 7})
    assert sorted(order[:3]) == [("x", 6), ("y", 6), ("z", 8)]
    assert sorted(order[3:]) == [("x", 7), ("z", 9)]
    assert order == blocks({"x": 2, "y": 1, "z": 2}, {"x": 5, "y": 5, "z": 7})
