"""Rollbacks stick, as a property: over random sequences of publish / rollback / revert / unrelated change on a
small generated store, `publish` (without --allow-rolled-back) never releases a value a rolled-back version
introduced while its watch lasts, and never refuses a ref that holds none. The expected outcome comes from a
model of the README's rule kept in plain dictionaries, independent of cfgtool's code; every step runs on a real
git repository through the library's `publish` and `rollback`."""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from cfgtool.versions import publish, rollback
from cfgtool.versions.publish import RolledBackContent
from tests.conftest import GitRepo

KEYS = ("/data/k0", "/data/k1", "/data/z")  # /data/z takes the unrelated changes

Values = dict[str, int]


@dataclass
class Published:
    values: Values
    rolled_back: bool = False
    after: int = 0  # for a rolled-back version: the highest version when it was rolled back


@dataclass
class Model:
    """What the README says publish must do, over the values each version holds."""

    versions: dict[int, Published] = field(default_factory=dict)

    def good(self) -> list[int]:
        return sorted(n for n, v in self.versions.items() if not v.rolled_back)

    def expect_refusal(self, candidate: Values) -> bool:
        current = self.good()[-1] if self.good() else None
        if current is not None and self.versions[current].values == candidate:
            return False  # nothing to publish
        for n, v in self.versions.items():
            if not v.rolled_back:
                continue
            later = [m for m in self.good() if m > v.after]
            below = [m for m in self.good() if m < n]
            if below:
                good = self.versions[below[-1]].values
                for key in KEYS:
                    bad = v.values[key]
                    ended = any(self.versions[m].values[key] != bad for m in later)
                    if good[key] != bad and not ended and candidate[key] == bad:
                        return True
            if candidate == v.values and not later:
                return True  # the very snapshot of a rolled-back version that nothing replaced
        return False


def write(repo: GitRepo, values: Values, message: str) -> None:
    repo.write({f"store{key}/main.conf": f"p = {value}\n" for key, value in values.items()})
    repo.commit(message)


Step = tuple[str, int, int]
OTHER = ["unrelated", "publish", "publish", "rollback", "rollback_to", "revert"]
steps = st.lists(
    st.one_of(
        st.tuples(st.just("set"), st.integers(0, 1), st.integers(1, 3)),
        st.tuples(st.sampled_from(OTHER), st.just(0), st.just(0)),
    ),
    min_size=3,
    max_size=9,
)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps)
@example([("set", 0, 2), ("publish", 0, 0), ("rollback", 0, 0), ("unrelated", 0, 0), ("publish", 0, 0)])
def test_publish_refuses_exactly_the_refs_that_hold_a_watched_rolled_back_value(sequence: list[Step]) -> None:
    with tempfile.TemporaryDirectory(prefix="cfgtool-sticky-") as tmp:
        repo = GitRepo(Path(tmp) / "repo")
        repo.write({"store/_CONFIG_STORE": "name: prop\n"})
        values: Values = {key: 1 for key in KEYS}
        write(repo, values, "start")
        model = Model()
        publish(repo.root, message="v1")
        model.versions[1] = Published(dict(values))
        counter = 100
        for op, index, value in sequence:
            if op == "set":
                values[KEYS[index]] = value
                write(repo, values, f"set {index}={value}")
            elif op == "unrelated":
                counter += 1
                values["/data/z"] = counter
                write(repo, values, "unrelated")
            elif op == "revert":
                current = model.versions[model.good()[-1]].values
                values.update({k: current[k] for k in KEYS[:2]})
                write(repo, values, "revert")
            elif op in ("rollback", "rollback_to"):
                good = model.good()
                if len(good) < 2:
                    continue
                highest = max(model.versions)
                targets = [n for n in good if n > good[0]] if op == "rollback_to" else [good[-1]]
                if op == "rollback_to":
                    rollback(repo.root, to=good[0], reason="bad")
                else:
                    rollback(repo.root, reason="bad")
                for n in targets:
                    model.versions[n].rolled_back = True
                    model.versions[n].after = highest
            else:
                expected = model.expect_refusal(values)
                try:
                    result = publish(repo.root)
                except RolledBackContent as refused:
                    assert expected, f"refused a ref that holds no watched value: {refused.message}"
                    continue
                assert not expected, f"published a rolled-back value: {values} over {model.versions}"
                if result.published:
                    assert result.version is not None
                    model.versions[result.version] = Published(dict(values))
