"""JSON Schemas by selector: violations with provenance, invalid schema files, selectors."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from cfgtool._util.codec import unpack
from cfgtool.compile.compiler import CompileResult, compile_store
from cfgtool.diagnostics import Diagnostic
from cfgtool.snapshot.model import Snapshot, node_hash
from cfgtool.validate import check_schemas, load_schemas, read_schema_files, schema_types

REPO_ROOT = Path(__file__).resolve().parents[2]  # the checkout: the embedded store and schemas

Compile = Callable[..., CompileResult]
Report = Callable[[CompileResult], tuple[list[Diagnostic], list[Diagnostic]]]


def rows(diags: list[Diagnostic]) -> list[tuple[Any, ...]]:
    """(key, file, line, col, message) per diagnostic, sorted: what the tests compare."""
    return sorted(((d.key, d.file, d.line, d.col, d.message) for d in diags), key=repr)


SETTINGS = "name: t\nschemas: ../schemas\n"

DATA_SCHEMA = """\
$schema: https://json-schema.org/draft/2020-12/schema
x-cfgtool:
  applies_to: {keys: ["/data/*"]}
type: object
required: [owner, contacts]
properties:
  owner: {type: string, pattern: "^[a-z-]+$", not: {const: unassigned}}
  kafka:
    type: object
    required: [topic]
    properties:
      partitions: {type: integer, maximum: 1024}
      replication: {type: object, properties: {factor: {type: integer, minimum: 2}}}
  acl: {type: object, properties: {readers: {type: array, items: {type: string}}}}
  retention:
    type: object
    additionalProperties: false
    properties:
      class: {enum: [SHORT, DEFAULT, LONG]}
      ms: {type: integer}
"""

TIER_SCHEMA = """\
x-cfgtool:
  applies_to:
    tags: [/tags/good]
    exclude: ["/tags/**"]
properties:
  tier: {const: 2}
"""

BAD_STORE = {
    "store/_CONFIG_STORE": SETTINGS,
    "store/main.conf": "env = prod\n",
    "store/data/main.conf": "owner = unassigned\nretention { class = DEFAULT, ms = 604800000 }\n",
    "store/data/x/main.conf": (
        "# a topic that breaks every rule\n"
        "kafka {\n"
        "  partitions = 2000\n"
        "  replication.factor = 1\n"
        "}\n"
        'acl.readers = ["a", "b", 3]\n'
        "retention.extra = 1\n"
        "retention.class = FOREVER\n"
        'owner = "Bad Owner"\n'
    ),
    "store/data/y/main.conf": "owner = ok-team\n",
    "store/data/y/includes": "/tags/bad\n",
    "store/data/z/includes": "/tags/good\n",
    "store/tags/bad/main.conf": 'retention.ms = "long"\n',
    "store/tags/good/main.conf": "tier = 1\n",
    "schemas/data.yaml": DATA_SCHEMA,
    "schemas/tier.yaml": TIER_SCHEMA,
    "schemas/README.md": "not a schema: ignored\n",
}


def test_check_schemas_store_breaking_every_rule_reports_each_value_at_its_origin(
    compile_files: Compile, schema_report: Report
) -> None:
    result = compile_files(BAD_STORE)
    assert result.diagnostics == ()
    load_diags, diags = schema_report(result)
    assert load_diags == []
    assert {(d.code, d.severity) for d in diags} == {("E_SCHEMA", "error")}
    data, tier = " (schema schemas/data.yaml)", " (schema schemas/tier.yaml)"
    x, y, z = "store/data/x/main.conf", "store/data/y/main.conf", "store/data/z/main.conf"
    assert rows(diags) == rows_of(
        [
            ("/data/x", x, 1, 1, "contacts: required, but not set" + data),
            ("/data/x", x, 3, 16, "kafka.topic: required, but not set" + data),
            ("/data/x", x, 3, 16, "kafka.partitions: 2000 is greater than the maximum of 1024" + data),
            ("/data/x", x, 4, 24, "kafka.replication.factor: 1 is less than the minimum of 2" + data),
            ("/data/x", x, 6, 15, "acl.readers[2]: expected a string, got an integer 3" + data),
            ("/data/x", x, 7, 19, "retention.extra: not allowed here (allowed: class, ms)" + data),
            ("/data/x", x, 8, 19, 'retention.class: "FOREVER" is not one of "SHORT", "DEFAULT", "LONG"' + data),
            ("/data/x", x, 9, 9, 'owner: "Bad Owner" does not match the pattern ^[a-z-]+$' + data),
            ("/data/y", y, 1, 1, "contacts: required, but not set" + data),
            (
                "/data/y",
                "store/tags/bad/main.conf",
                1,
                16,
                'retention.ms: expected an integer, got a string "long"' + data,
            ),
            # /data/z has no main.conf: the file it would have, without a line
            ("/data/z", z, None, None, "contacts: required, but not set" + data),
            (
                "/data/z",
                "store/data/main.conf",
                1,
                9,
                'owner: "unassigned" is not allowed here (the schema forbids {"const": "unassigned"})' + data,
            ),
            ("/data/z", "store/tags/good/main.conf", 1, 8, "tier: must be 2, not 1" + tier),
        ]
    )


def rows_of(items: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    return sorted(items, key=repr)


def test_check_schemas_messages_never_name_the_node_so_failures_group(
    compile_files: Compile, schema_report: Report
) -> None:
    files = {f"store/data/d{i}/main.conf": "n = 1\n" for i in range(6)}
    files.update({"store/_CONFIG_STORE": SETTINGS, "store/data/main.conf": "retention.ms = -1\n"})
    files["schemas/r.yaml"] = (
        "x-cfgtool: {applies_to: {keys: ['/data/*']}}\nproperties: {retention: {properties: {ms: {minimum: 0}}}}\n"
    )
    _, diags = schema_report(compile_files(files))
    assert {(d.file, d.line, d.col, d.message) for d in diags} == {
        (
            "store/data/main.conf",
            1,
            16,
            "retention.ms: -1 is less than the minimum of 0 (schema schemas/r.yaml)",
        )
    }
    assert sorted(str(d.key) for d in diags) == [f"/data/d{i}" for i in range(6)]


def test_check_schemas_skips_nodes_without_resolved_config(compile_files: Compile, schema_report: Report) -> None:
    result = compile_files(
        {
            "store/_CONFIG_STORE": SETTINGS,
            "store/data/a/main.conf": "x = ${missing}\n",
            "store/data/b/main.conf": "x = 1\n",
            "schemas/s.yaml": "x-cfgtool: {applies_to: {keys: ['/data/*']}}\nrequired: [y]\n",
        }
    )
    assert [d.code for d in result.diagnostics] == ["E_UNRESOLVED_REF"]
    _, diags = schema_report(result)
    assert [(d.key, d.message) for d in diags] == [("/data/b", "y: required, but not set (schema schemas/s.yaml)")]


# ------------------------------------------------------------------------------------------------ selectors


SELECTOR_STORE = {
    "store/_CONFIG_STORE": SETTINGS,
    "store/data/main.conf": "",
    "store/data/a/main.conf": "",
    "store/data/a/includes": "/tags/t\n",
    "store/data/b/main.conf": "",
    "store/data/c/main.conf": "",
    "store/tags/t/main.conf": "",
    "store/tags/u/includes": "/tags/t\n",
    "store/other/main.conf": "",
    "store/other/includes": "/tags/u\n",
}


def selected(compile_files: Compile, schema_report: Report, applies_to: Any) -> list[str]:
    schema = {"x-cfgtool": {"applies_to": applies_to}, "required": ["never-set"]}
    if applies_to is None:
        del schema["x-cfgtool"]
    result = compile_files({**SELECTOR_STORE, "schemas/s.json": json.dumps(schema)})
    load_diags, diags = schema_report(result)
    assert load_diags == []
    return sorted(d.key for d in diags if d.key)


def test_selector_keys_and_tags_combine_as_or(compile_files: Compile, schema_report: Report) -> None:
    applies = {"keys": ["/data/b"], "tags": ["/tags/t"], "exclude": ["/tags/**"]}
    # /data/a imports /tags/t, /other imports /tags/u which imports /tags/t
    assert selected(compile_files, schema_report, applies) == ["/data/a", "/data/b", "/other"]


def test_selector_tags_include_the_tag_itself_unless_excluded(compile_files: Compile, schema_report: Report) -> None:
    assert selected(compile_files, schema_report, {"tags": ["/tags/t"]}) == ["/data/a", "/other", "/tags/t", "/tags/u"]


def test_selector_glob_star_is_one_segment_double_star_any_depth(compile_files: Compile, schema_report: Report) -> None:
    assert selected(compile_files, schema_report, {"keys": ["/data/*"]}) == ["/data/a", "/data/b", "/data/c"]
    # a trailing /** needs at least one segment: `/**` is every node but the root, `/tags/**` spares /tags
    assert selected(compile_files, schema_report, {"keys": ["/**"], "exclude": ["/data/**", "/tags/**"]}) == [
        "/data",
        "/other",
        "/tags",
    ]


def test_selector_absent_selects_every_node_that_is_not_a_tag(compile_files: Compile, schema_report: Report) -> None:
    expected = ["/", "/data", "/data/a", "/data/b", "/data/c", "/other"]
    assert selected(compile_files, schema_report, None) == expected
    assert selected(compile_files, schema_report, {}) == expected
    assert selected(compile_files, schema_report, {"keys": [], "tags": []}) == expected
    assert selected(compile_files, schema_report, {"exclude": ["/data/**"]}) == ["/", "/data", "/other"]


def test_selector_entries_matching_no_node_are_reported_at_the_schema_file(
    compile_files: Compile, schema_report: Report
) -> None:
    schema = (
        "x-cfgtool:\n"
        "  applies_to:\n"
        "    keys: [/data/a, /data/typo/*]\n"
        "    tags:\n"
        "      - /tags/t\n"
        "      - /tags/nope\n"
        "required: [x]\n"
    )
    load_diags, diags = schema_report(compile_files({**SELECTOR_STORE, "schemas/s.yaml": schema}))
    assert load_diags == []
    unmatched = [(d.file, d.line, d.col, d.message) for d in diags if d.key is None]
    assert unmatched == [
        (
            "schemas/s.yaml",
            3,
            21,
            "applies_to.keys[1] /data/typo/* matches no node, so this schema checks nothing there",
        ),
        ("schemas/s.yaml", 6, 9, "applies_to.tags[1] /tags/nope has no node, so no node imports it"),
    ]
    assert all(d.code == "E_SCHEMA" and d.severity == "error" for d in diags)
    assert sorted(d.key for d in diags if d.key) == ["/data/a", "/other", "/tags/t", "/tags/u"]


def test_selector_of_tags_after_an_import_cycle_names_the_cycle(compile_files: Compile, schema_report: Report) -> None:
    """The tag and its importers are on or behind an import cycle: their imports are unknown, and the message
    says so (not that applies_to, or an exclude it does not have, selects nothing)."""
    schema = "x-cfgtool:\n  applies_to: {tags: [/tags/t]}\n"
    store = {**SELECTOR_STORE, "store/tags/t/includes": "/data/a\n", "schemas/s.yaml": schema}
    result = compile_files(store)
    assert any(d.code == "E_CYCLE" for d in result.diagnostics)
    _, diags = schema_report(result)
    (d,) = [d for d in diags if d.file == "schemas/s.yaml"]
    assert d.message == (
        "applies_to selects no node, and cannot tell for /data/a, /other, /tags/t and 1 more: on or behind an "
        "import cycle (E_CYCLE), their imports are unknown; fix the cycle first"
    )


def test_selector_emptied_by_exclude_is_reported_at_applies_to(compile_files: Compile, schema_report: Report) -> None:
    schema = "x-cfgtool:\n  applies_to: {keys: ['/data/*'], exclude: ['/data/**']}\n"
    _, diags = schema_report(compile_files({**SELECTOR_STORE, "schemas/s.yaml": schema}))
    assert [(d.file, d.line, d.col, d.message) for d in diags] == [
        (
            "schemas/s.yaml",
            2,
            15,
            "applies_to selects no node once exclude is applied, so this schema checks nothing",
        )
    ]


# ------------------------------------------------------------------------------------------- invalid schemas


def load(files: dict[str, str | None]) -> tuple[list[str], list[tuple[str | None, int | None, int | None, str]]]:
    specs, diags = load_schemas(files, "t")
    assert all(d.code == "E_SCHEMA" and d.key is None for d in diags)
    return [s.file for s in specs], [(d.file, d.line, d.col, d.message) for d in diags]


def test_load_schemas_invalid_yaml_and_json_point_at_the_error() -> None:
    specs, diags = load(
        {
            "schemas/a.yaml": "type: object\nproperties: [unclosed\n",
            "schemas/b.json": '{"type": "object",\n  "required": [}\n',
            "schemas/ok.yml": "type: object\n",
        }
    )
    assert specs == ["schemas/ok.yml"]
    assert diags == [
        ("schemas/a.yaml", 3, 1, "not valid YAML: expected ',' or ']', but got '<stream end>'"),
        ("schemas/b.json", 2, 16, "not valid JSON: Expecting value"),
    ]


def test_load_schemas_invalid_json_schema_names_the_keyword() -> None:
    text = "type: object\nproperties:\n  n: {type: integr}\n  p: {type: string, pattern: '(['}\n"
    assert load({"schemas/s.yaml": text}) == (
        [],
        [
            (
                "schemas/s.yaml",
                3,
                13,
                'invalid JSON Schema at properties.n.type: "integr" does not match any of '
                'the allowed schemas; closest: "integr" is not one of "array", "boolean", "integer", "null", '
                '"number", "object", "string"',
            ),
            ("schemas/s.yaml", 4, 30, "invalid JSON Schema at properties.p.pattern: '([' is not a 'regex'"),
        ],
    )


def test_load_schemas_unknown_x_cfgtool_fields_are_reported_at_the_key() -> None:
    text = (
        "x-cfgtool:\n"
        "  appliesTo: {keys: [/a]}\n"
        "  applies_to:\n"
        "    key: [/a]\n"
        "    tags: [not a key]\n"
        "    exclude: [data/**, /a**]\n"
    )
    assert load({"schemas/s.yaml": text})[1] == [
        ("schemas/s.yaml", 2, 3, "unknown field 'x-cfgtool.appliesTo' (known: applies_to)"),
        ("schemas/s.yaml", 4, 5, "unknown field 'x-cfgtool.applies_to.key' (known: keys, tags, kinds, exclude)"),
        (
            "schemas/s.yaml",
            5,
            12,
            "x-cfgtool.applies_to.tags[0]: key 'not a key' has an invalid segment 'not a key'",
        ),
        (
            "schemas/s.yaml",
            6,
            15,
            "x-cfgtool.applies_to.exclude[0]: 'data/**' is not a key glob: start with / and use key segments, "
            "`*` (one segment) and `**` (any depth) as whole segments",
        ),
        (
            "schemas/s.yaml",
            6,
            24,
            "x-cfgtool.applies_to.exclude[1]: '/a**' is not a key glob: start with / and use key segments, "
            "`*` (one segment) and `**` (any depth) as whole segments",
        ),
    ]


def test_load_schemas_wrong_shapes() -> None:
    specs, diags = load(
        {
            "schemas/empty.yaml": "",
            "schemas/list.yaml": "- a\n",
            "schemas/ext.yaml": "x-cfgtool: [applies_to]\n",
            "schemas/applies.yaml": "x-cfgtool: {applies_to: /data/*}\n",
            "schemas/keys.yaml": "x-cfgtool: {applies_to: {keys: /data/*}}\n",
            "schemas/draft.yaml": "$schema: http://json-schema.org/draft-07/schema#\n",
            "schemas/dup.yaml": "type: object\ntype: string\n",
            "schemas/latin1.json": None,
        }
    )
    assert specs == []
    assert diags == [
        ("schemas/applies.yaml", 1, 25, "x-cfgtool.applies_to must be a mapping of keys, tags, kinds and exclude"),
        (
            "schemas/draft.yaml",
            1,
            10,
            "$schema is 'http://json-schema.org/draft-07/schema#', but cfgtool checks schemas as draft 2020-12 "
            "(https://json-schema.org/draft/2020-12/schema)",
        ),
        ("schemas/dup.yaml", 2, 1, "key 'type' is set twice in one mapping; only the last one counts"),
        ("schemas/empty.yaml", 1, 1, "a schema file must hold a JSON Schema object (a mapping), but it is empty"),
        ("schemas/ext.yaml", 1, 12, "x-cfgtool must be a mapping with 'applies_to'"),
        ("schemas/keys.yaml", 1, 32, "x-cfgtool.applies_to.keys must be a list of strings"),
        ("schemas/latin1.json", 1, 1, "the schema file is not UTF-8 text"),
        ("schemas/list.yaml", 1, 1, "a schema file must hold a JSON Schema object (a mapping), but it is a list"),
    ]


def test_load_schemas_accepts_the_2020_12_uri_with_fragment() -> None:
    assert load({"schemas/s.json": '{"$schema": "https://json-schema.org/draft/2020-12/schema#"}'}) == (
        ["schemas/s.json"],
        [],
    )


def embedded_snapshot() -> Snapshot:
    return compile_store(REPO_ROOT, "store", None).snapshot


def test_check_schemas_ref_between_files_by_id_and_by_path(compile_files: Compile, schema_report: Report) -> None:
    files = {
        "store/_CONFIG_STORE": SETTINGS,
        "store/data/main.conf": "a = x\nb = y\n",
        "schemas/defs/common.yaml": (
            "$id: https://example.com/common.yaml\n"
            "x-cfgtool: {applies_to: {keys: [/data]}}\n"
            "$defs: {num: {type: integer}}\n"
        ),
        "schemas/by-id.yaml": (
            "x-cfgtool: {applies_to: {keys: [/data]}}\n"
            "properties: {a: {$ref: 'https://example.com/common.yaml#/$defs/num'}}\n"
        ),
        "schemas/by-path.yaml": (
            "x-cfgtool: {applies_to: {keys: [/data]}}\nproperties: {b: {$ref: 'defs/common.yaml#/$defs/num'}}\n"
        ),
    }
    load_diags, diags = schema_report(compile_files(files))
    assert load_diags == []
    assert sorted(d.message for d in diags) == [
        'a: expected an integer, got a string "x" (schema schemas/by-id.yaml)',
        'b: expected an integer, got a string "y" (schema schemas/by-path.yaml)',
    ]


def test_check_schemas_unresolvable_ref_is_reported_once_at_the_schema(
    compile_files: Compile, schema_report: Report
) -> None:
    files = {
        "store/_CONFIG_STORE": SETTINGS,
        "store/data/a/main.conf": "a = 1\n",
        "store/data/b/main.conf": "a = 1\n",
        "schemas/s.yaml": (
            "x-cfgtool: {applies_to: {keys: ['/data/*']}}\nproperties: {a: {$ref: 'https://nowhere.example/x.json'}}\n"
        ),
    }
    _, diags = schema_report(compile_files(files))
    assert [(d.file, d.key, d.message) for d in diags] == [
        (
            "schemas/s.yaml",
            None,
            "the schema cannot be applied: $ref 'https://nowhere.example/x.json' names no schema file or $id",
        )
    ]


# ---------------------------------------------------------------------------------------------- reading files


def test_read_schema_files_from_working_tree_and_commit(repo: Any) -> None:
    repo.write({"schemas/a.yaml": "type: object\n", "schemas/sub/b.json": "{}", "schemas/notes.txt": "x"})
    commit = repo.commit()
    repo.write({"schemas/a.yaml": "type: string\n", "schemas/c.yml": "{}\n"})
    assert read_schema_files(repo.root, "schemas") == {
        "schemas/a.yaml": "type: string\n",
        "schemas/c.yml": "{}\n",
        "schemas/sub/b.json": "{}",
    }
    assert read_schema_files(repo.root, "schemas", commit) == {
        "schemas/a.yaml": "type: object\n",
        "schemas/sub/b.json": "{}",
    }


# ---------------------------------------------------------------------------------------------- schema_types


def test_schema_types_from_simple_type_keywords() -> None:
    specs, _ = load_schemas(
        {
            "schemas/a.yaml": (
                "properties:\n"
                "  kafka: {type: object, properties: {partitions: {type: integer}, topic: {type: string}}}\n"
                "  ratio: {type: integer}\n"
                "  flag: {type: boolean}\n"
                "  either: {type: [string, 'null']}\n"
                "  ref: {$ref: '#/$defs/x'}\n"
                "  clash: {type: string}\n"
                "$defs: {x: {type: string}}\n"
            ),
            "schemas/b.yaml": (
                "properties:\n"
                "  ratio: {type: number}\n"
                "  clash: {type: integer}\n"
                "  c: {properties: {'d.e': {type: string}}}\n"
            ),
        }
    )
    assert schema_types(specs) == {
        "kafka.partitions": "integer",
        "kafka.topic": "string",
        "ratio": "number",
        "flag": "boolean",
        'c."d.e"': "string",
    }


def test_schema_types_only_schemas_selecting_a_node() -> None:
    snapshot = embedded_snapshot()
    files = read_schema_files(REPO_ROOT, "schemas")
    nowhere = 'x-cfgtool: {applies_to: {keys: ["/nowhere/**"]}}\nproperties: {ghost: {type: string}}\n'
    specs, diags = load_schemas({**files, "schemas/nowhere.yaml": nowhere}, "demo")
    assert diags == []
    types = schema_types(specs, snapshot)
    assert types["retention.ms"] == "integer" and types["kafka.partitions"] == "integer"
    assert "ghost" not in types  # its schema selects no node
    assert schema_types(specs)["ghost"] == "string"  # without a snapshot, every schema counts


def test_embedded_store_passes_every_schema() -> None:
    snapshot = embedded_snapshot()
    specs, diags = load_schemas(read_schema_files(REPO_ROOT, "schemas"), "demo")
    assert diags == []
    assert sorted(s.file for s in specs) == [
        "schemas/credentials.yaml",
        "schemas/owner.yaml",
        "schemas/partitions.yaml",
        "schemas/retention.yaml",
        "schemas/sla.yaml",
    ]
    assert all(s.selected(snapshot) for s in specs)
    assert check_schemas(specs, snapshot) == []


def test_passing_verdicts_are_reused_and_a_changed_schema_checks_again(
    compile_files: Compile, schema_report: Report, tmp_path: Path, monkeypatch: Any
) -> None:
    """Nodes whose content passed a set of schemas are not validated again; failures always are, and a
    changed schema starts a new set (its violation is found in a node that passed the old one)."""
    monkeypatch.setenv("CFGTOOL_CACHE_DIR", str(tmp_path / "cache"))
    result = compile_files({**BAD_STORE, "store/data/ok/main.conf": "owner = ok-team\ncontacts {}\n"})
    first = rows(schema_report(result)[1])
    assert first == rows(schema_report(result)[1])  # the failures are reported again, not cached away
    (passes,) = (tmp_path / "cache").glob("schema-passes-*")
    shards = [unpack(shard.read_bytes()[32:]) for shard in passes.glob("*.msgpack")]  # each after its tag
    stored = {tuple(k.split("\0")) for shard in shards for k in shard}
    assert stored == {("schemas/data.yaml", node_hash(result.snapshot.nodes["/data/ok"]))}

    stricter = DATA_SCHEMA.replace("required: [owner, contacts]", "required: [owner, contacts, sla]")
    again = compile_files({"schemas/data.yaml": stricter})
    violations = rows(schema_report(again)[1])
    assert any(row[0] == "/data/ok" and "sla" in row[4] for row in violations)


def test_a_check_split_with_a_forked_worker_reports_what_one_process_does(
    compile_files: Compile, schema_report: Report, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Many nodes to check go half to a forked worker (`schemas.PARALLEL_MIN`): the same problems in the same
    order, including a schema that turns out not to apply in either half."""
    import cfgtool._util.forking
    import cfgtool.validate.schemas as schemas

    unusable = {
        "store/_CONFIG_STORE": SETTINGS,
        "store/data/a/main.conf": "b = 1\n",
        "store/data/b/main.conf": "a = 1\n",
        "store/data/c/main.conf": "b = x\n",
        "schemas/s.yaml": (
            "x-cfgtool: {applies_to: {keys: ['/data/*']}}\n"
            "properties: {a: {$ref: 'https://nowhere.example/x.json'}, b: {type: integer}}\n"
        ),
    }
    forks: list[object] = []
    real_fork = cfgtool._util.forking.fork

    def counted(work: Callable[[], bytes]) -> Callable[[], bytes | None]:
        forks.append(work)
        return real_fork(work)

    monkeypatch.setattr(schemas, "fork", counted)
    monkeypatch.setattr(schemas, "can_fork", lambda: True)  # also under pytest-xdist's threads
    for files in (BAD_STORE, unusable):
        result = compile_files(files)
        monkeypatch.setattr(schemas, "PARALLEL_MIN", 10**9)
        _, alone = schema_report(result)
        assert forks == []
        monkeypatch.setattr(schemas, "PARALLEL_MIN", 1)
        _, split = schema_report(result)
        assert forks
        forks.clear()
        assert split == alone
        assert alone
