"""How attach meets the data (cfgtool/spark/join.py), on a real local Spark session: key columns of any name,
store names with regular-expression characters, and the lookup's own column names reserved."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from cfgtool.errors import UsageError
from cfgtool.spark import ConfigLoader
from cfgtool.spark.join import LOOKUP_KEY, canonical, string
from cfgtool.versions import publish
from tests.conftest import copy_embedded

pytestmark = pytest.mark.xdist_group("spark")

if TYPE_CHECKING:
    from tests.conftest import GitRepo

TOPIC = "/data/tracking/PageViewEvent"


@pytest.fixture(scope="module")
def published(tmp_path_factory: pytest.TempPathFactory) -> GitRepo:
    repo = copy_embedded(tmp_path_factory.mktemp("join") / "repo")
    publish(repo.root, message="first")
    return repo


@pytest.mark.parametrize("missing", ["inherit", "null"])
def test_attach_on_a_column_whose_name_has_dots_and_backquotes(
    spark: Any, published: GitRepo, tmp_path: Path, missing: Any
) -> None:
    df = spark.createDataFrame([(0, TOPIC), (1, "demo:/data/tracking/PageViewEvent/")], ["id", "my.`key`"])
    loader = ConfigLoader(spark, published.root, cache_dir=tmp_path)
    out = loader.attach(df, on="my.`key`", paths=["kafka.partitions"], missing=missing)
    assert out.columns == ["id", "my.`key`", "kafka_partitions"]
    assert {r.id: r.kafka_partitions for r in out.collect()} == {0: 128, 1: 128}


def test_attach_refuses_a_column_named_as_the_lookup_s_own(spark: Any, published: GitRepo, tmp_path: Path) -> None:
    df = spark.createDataFrame([(0, TOPIC)], ["id", LOOKUP_KEY])
    loader = ConfigLoader(spark, published.root, cache_dir=tmp_path)
    with pytest.raises(UsageError, match=LOOKUP_KEY):
        loader.attach(df, on=LOOKUP_KEY, paths=["owner"])


@pytest.mark.parametrize("store_name", ["demo", "a.b+c", "it's", "back\\slash", "[x]"])
def test_canonical_strips_exactly_the_store_s_scheme(spark: Any, store_name: str) -> None:
    """The SQL of `canonical` quotes the store name (a literal, then a regular expression) whatever it holds;
    an invalid key stays invalid (it matches no node)."""
    keys = [f"{store_name}:/data/x", f"{store_name}:data/x", "data/x/", "/data/x", "/", "other:/data/x", None]
    df = spark.createDataFrame([(i, k) for i, k in enumerate(keys)], "id int, k string")
    got = [r.c for r in df.orderBy("id").selectExpr(f"{canonical('k', store_name)} AS c").collect()]
    assert got == ["/data/x", f"/{store_name}:data/x", "/data/x", "/data/x", "/", "/other:/data/x", None]
    literal = spark.sql(f"SELECT {string(re.escape(store_name))} AS s").collect()[0].s
    assert literal == re.escape(store_name)
