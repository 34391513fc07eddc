"""`GET /v1/openapi.json`: the OpenAPI 3.1 document of the HTTP API (docs/serving.md), built once as bytes.

Every endpoint with every status it can answer, its bodies as JSON Schemas, its headers and the bearer scheme.
`{key}` is one path parameter holding the key without its leading `/`. OpenAPI's path templates cannot match a `/`,
so a client may send the key's `/` as `%2F`. The server decodes the path before routing, so both spellings name the
same key. The empty string is the root key `/`. `tests/serve/test_openapi.py` checks the document against OpenAPI's
meta-schema and against the routes the server answers, and fuzzes a live server with it.
"""

from __future__ import annotations

from typing import Any

from cfgtool.serve.answers import Answer, answer

JSON = "application/json"
QUERIES = ("tags", "datasets", "imports", "imported-by", "explain")
Schema = dict[str, Any]


def _ref(kind: str, name: str) -> Schema:
    return {"$ref": f"#/components/{kind}/{name}"}


def _obj(required: list[str], properties: dict[str, Schema]) -> Schema:
    """An object with these properties (more are allowed: new fields never break a reader)."""
    return {"type": "object", "required": required, "properties": properties}


STRING: Schema = {"type": "string"}
NULLABLE_STRING: Schema = {"type": ["string", "null"]}
INT: Schema = {"type": "integer"}
OBJECT: Schema = {"type": "object"}
KEYS: Schema = {"type": "array", "items": STRING}
ORIGIN: Schema = {"oneOf": [{"type": "null"}, _obj(["file", "line", "col"], {"file": STRING, "line": INT, "col": INT})]}

DID_YOU_MEAN_KEY: Schema = {
    "type": "string",
    "description": "when `exists` is false: a node with a close key that the principal may describe",
}

ROLLOUT: Schema = {
    "store": STRING,
    "version": INT,
    "stable": {"type": ["integer", "null"], "description": "the version readers outside the cohort read"},
    "state": {"enum": ["rolling", "paused", "holding", "baking", "done", "rolled_back", "waiting", "superseded"]},
    "percent": {"type": "integer", "minimum": 0, "maximum": 100},
    "step": {"type": "integer", "minimum": 0, "description": "the index of `percent` in `steps`"},
    "steps": {"type": "array", "items": INT},
    "since": {"type": ["string", "null"], "description": "when the current step began"},
    "cohort": {
        "description": "the step's cohort among the instances this server heard from",
        "oneOf": [
            {"type": "null"},
            _obj(["instances", "applied", "failed"], {"instances": INT, "applied": INT, "failed": INT}),
        ],
    },
    "gates": {
        "type": "array",
        "items": _obj(["gate", "result", "detail"], {"gate": STRING, "result": STRING, "detail": STRING}),
        "description": "the gates' evidence recorded when the rollout last moved",
    },
    "why": {**NULLABLE_STRING, "description": "what the rollout waits for, or how it ended"},
    "events": {"type": "array", "items": OBJECT, "description": "its step tags, oldest first"},
}  # every field is always there

SCHEMAS: dict[str, Schema] = {
    "Error": _obj(
        ["error"],
        {
            "error": {"type": "string", "description": "a stable code: `not_found`, `E_NO_ACL`, `E_INTERNAL`, ..."},
            "message": {"type": "string", "description": "what went wrong, for a person"},
            "id": {"type": "string", "description": "with `E_INTERNAL`: the id of the server's log line"},
            "did_you_mean": {
                "type": "string",
                "description": 'with a `?path=` that is not set: the quoted path that is (`a."b.c"` for `a.b.c`)',
            },
        },
    ),
    "Redirect": _obj(
        ["store", "name", "version", "location"],
        {"store": STRING, "name": {"enum": ["current", "previous"]}, "version": INT, "location": STRING},
    ),
    "Store": _obj(
        ["name", "path", "current", "seq"],
        {"name": STRING, "path": STRING, "current": {"type": ["integer", "null"]}, "seq": INT},
    ),
    "Version": _obj(
        ["version", "tag", "commit", "date", "status", "publisher", "message", "digest", "rolled_back"],
        {
            "version": INT,
            "tag": STRING,
            "commit": STRING,
            "date": {"type": "string", "format": "date-time"},
            "status": {"enum": ["current", "good", "rolled_back"]},
            "publisher": NULLABLE_STRING,
            "principal": NULLABLE_STRING,
            "message": NULLABLE_STRING,
            "digest": NULLABLE_STRING,
            "rolled_back": {
                "oneOf": [
                    {"type": "null"},
                    _obj(["by", "date", "reason"], {"by": STRING, "date": STRING, "reason": STRING, "tag": STRING}),
                ]
            },
            "store": NULLABLE_STRING,
            "nodes": {
                "type": ["integer", "null"],
                "description": "null for a principal that may not describe every key (it would count them)",
            },
            "cfgtool_version": NULLABLE_STRING,
            "allow_rolled_back": {
                "type": "array",
                "items": INT,
                "description": "rolled-back versions whose values this one re-released on purpose",
            },
            "servable": {"type": "boolean", "description": "false for a version whose compile has errors"},
            "rollout": {
                "description": "null for a version that went out at once, else its staged rollout's state",
                "oneOf": [
                    {"type": "null"},
                    _obj(
                        ["state", "percent"],
                        {
                            "state": {
                                "enum": ["waiting", "rolling", "paused", "baking", "done", "rolled_back", "superseded"]
                            },
                            "percent": {"type": "integer", "minimum": 0, "maximum": 100},
                        },
                    ),
                ],
            },
            "restored": {
                "description": "a rollback of this version that was cancelled (`cfgtool rollback --cancel N`)",
                "oneOf": [
                    {"type": "null"},
                    _obj(
                        ["by", "date", "reason", "rolled_back"],
                        {
                            "by": STRING,
                            "date": STRING,
                            "reason": STRING,
                            "tag": STRING,
                            "rolled_back": {"type": "object"},
                        },
                    ),
                ],
            },
        },
    ),
    "KeyConfig": _obj(
        ["store", "key", "version", "commit", "exists", "config"],
        {
            "store": STRING,
            "key": STRING,
            "version": INT,
            "commit": STRING,
            "exists": {"type": "boolean", "description": "false: the key has no node, `config` is its nearest's"},
            "config": {"type": "object", "description": "the resolved config; a secret is `[hidden]` or sealed"},
            "did_you_mean": DID_YOU_MEAN_KEY,
        },
    ),
    "KeyValue": _obj(
        ["store", "key", "version", "path", "value", "exists"],
        {
            "store": STRING,
            "key": STRING,
            "version": INT,
            "path": STRING,
            "value": {},
            "exists": {"type": "boolean", "description": "false: the key has no node, `value` is its nearest's"},
            "did_you_mean": DID_YOU_MEAN_KEY,
        },
    ),
    "Tags": _obj(["key", "exists", "tags"], {"key": STRING, "exists": {"type": "boolean"}, "tags": KEYS}),
    "Datasets": _obj(["tag", "datasets"], {"tag": STRING, "datasets": KEYS}),
    "Imports": _obj(
        ["key", "exists", "recursive", "imports"],
        {"key": STRING, "exists": {"type": "boolean"}, "recursive": {"type": "boolean"}, "imports": KEYS},
    ),
    "ImportedBy": _obj(
        ["key", "recursive", "imported_by"],
        {"key": STRING, "recursive": {"type": "boolean"}, "imported_by": KEYS},
    ),
    "Explanation": _obj(
        ["key", "node", "exists", "path", "found", "value", "origin", "sources", "overridden", "layers"],
        {
            "key": STRING,
            "node": STRING,
            "exists": {"type": "boolean"},
            "path": STRING,
            "found": {"type": "boolean"},
            "value": {},
            "origin": ORIGIN,
            "sources": {"type": "array", "items": ORIGIN},
            "overridden": {"type": "array", "items": _obj(["layer", "value"], {"layer": STRING, "origin": ORIGIN})},
            "layers": {
                "type": "array",
                "items": _obj(["layer"], {"layer": STRING, "reached": STRING, "origin": ORIGIN}),
            },
            "did_you_mean": {"type": "string", "description": "when `found` is false: the quoted path that is set"},
            "hidden_layers": {
                "type": "integer",
                "minimum": 0,
                "description": "with `--tokens`: how many layers show as `[hidden layer]` (the principal may not "
                "describe them)",
            },
        },
    ),
    "Changes": _obj(
        ["seq", "current", "events"],
        {
            "seq": INT,
            "current": {"type": ["integer", "null"]},
            "events": {
                "type": "array",
                "items": _obj(
                    ["seq", "kind", "version", "date", "changed_keys", "effective_by"],
                    {
                        "seq": INT,
                        "kind": {"enum": ["publish", "rollback", "restore", "rollout"]},
                        "version": INT,
                        "date": {"type": "string", "format": "date-time"},
                        "changed_keys": {
                            "type": ["integer", "null"],
                            "description": "null for a principal that may not describe every key",
                        },
                        "effective_by": {"type": "string", "format": "date-time"},
                    },
                ),
            },
        },
    ),
    "Instance": _obj(
        ["id", "principal", "kind", "address", "version", "reported", "last_contact", "last_check"],
        {
            "id": {**STRING, "description": "its `Cfgtool-Instance`"},
            "principal": NULLABLE_STRING,
            "kind": {"enum": ["client", "watch", "agent", "cli", "other"]},
            "address": NULLABLE_STRING,
            "version": {"type": ["integer", "null"], "description": "the version it read, or applied if it reported"},
            "reported": {"type": "boolean", "description": "whether `version` is the one it reported as applied"},
            "last_contact": {"type": "string", "format": "date-time"},
            "last_check": {
                "oneOf": [
                    {"type": "null"},
                    _obj(
                        ["version", "ok", "message", "at"],
                        {
                            "version": INT,
                            "ok": {"type": "boolean"},
                            "message": {
                                **NULLABLE_STRING,
                                "description": "null (and `withheld`) unless the asker may read every key in `keys`",
                            },
                            "keys": {"type": ["array", "null"], "items": STRING},
                            "withheld": {"type": "boolean"},
                            "at": STRING,
                        },
                    ),
                ]
            },
            "errors": {
                "type": "object",
                "additionalProperties": INT,
                "description": '`{"N": count}`: the errors it reported on each version (its 10 highest)',
            },
            "last_error": {
                "oneOf": [
                    {"type": "null"},
                    _obj(
                        ["version", "message", "at"],
                        {
                            "version": INT,
                            "message": {**NULLABLE_STRING, "description": "null (and `withheld`) but for super users"},
                            "withheld": {"type": "boolean"},
                            "at": STRING,
                        },
                    ),
                ]
            },
        },
    ),
    "Consumers": _obj(
        ["instances", "by_version"],
        {
            "instances": {"type": "array", "items": _ref("schemas", "Instance")},
            "by_version": {"type": "object", "additionalProperties": INT, "description": '`{"N": instances}`'},
        },
    ),
    "Rollout": _obj(list(ROLLOUT), ROLLOUT),
    "Report": {
        **_obj(
            [],
            {
                "applied": {"type": ["integer", "null"], "minimum": 1, "maximum": 999_999_999},
                "last_check": {
                    "oneOf": [
                        {"type": "null"},
                        _obj(
                            ["version", "ok"],
                            {
                                "version": {"type": "integer", "minimum": 1, "maximum": 999_999_999},
                                "ok": {"type": "boolean"},
                                "message": {**NULLABLE_STRING, "description": "kept to 500 characters"},
                                "keys": {
                                    "type": ["array", "null"],
                                    "items": STRING,
                                    "maxItems": 100,
                                    "description": "the keys the files were rendered from: who may read them all"
                                    " reads `message`",
                                },
                            },
                        ),
                    ]
                },
                "error": {
                    "oneOf": [
                        {"type": "null"},
                        _obj(
                            ["version"],
                            {
                                "version": {"type": "integer", "minimum": 1, "maximum": 999_999_999},
                                "message": {**NULLABLE_STRING, "description": "kept to 500 characters"},
                            },
                        ),
                    ],
                    "description": "an error the application met on a version (`ConfigClient.report_error()`)",
                },
            },
        ),
        "anyOf": [{"required": ["applied"]}, {"required": ["error"]}],
        "maxProperties": 8,
    },
    "Health": _obj(
        [],
        {
            "status": {"enum": ["ok", "starting", "failing"]},
            "ready": {"type": "boolean"},
            "stores": {"type": "array", "items": {"type": "object"}},
            "fetch": {"type": "object"},
        },
    ),
}


def _header(description: str, schema: Schema | None = None) -> Schema:
    return {"description": description, "schema": schema or STRING}


HEADERS: dict[str, Schema] = {
    "ETag": _header('`"sha256:<hex>"` of the body, which is canonical JSON', {"type": "string", "pattern": '^"'}),
    "Cache-Control": _header(
        "`private, max-age=31536000, immutable` for a version's answer; `private, must-revalidate, max-age=S, "
        "stale-if-error=86400` for a `current` answer (`public` for both with `--public-cache`); `no-cache` for "
        "the stores list; `no-store` for errors, feeds and consumers"
    ),
    "Cfgtool-Version": _header(
        "the version a `current` answer, or a redirect, stands for", {"type": "string", "pattern": "^[0-9]+$"}
    ),
    "Content-Location": _header("the `versions/{N}/...` URL of a `current` answer"),
    "WWW-Authenticate": _header('`Bearer realm="cfgtool"`'),
    "Location": _header("the `versions/{N}/...` URL that `current` or `previous` names now"),
    "Cfgtool-Node": _header(
        "`none` on every answer about a key that has no node (it reads as its nearest ancestor)", {"enum": ["none"]}
    ),
    "Retry-After": _header("seconds to wait before trying again", {"type": "string", "pattern": "^[0-9]+$"}),
    "Vary": _header(
        "`Cfgtool-Instance` on a `current` answer while a staged rollout is live, and on the stores list (each "
        "store's `current`): it depends on the instance"
    ),
}


def _error(description: str, extra: dict[str, Schema] | None = None) -> Schema:
    out: Schema = {"description": description, "content": {JSON: {"schema": _ref("schemas", "Error")}}}
    if extra:
        out["headers"] = extra
    return out


def _headers(*names: str, required: tuple[str, ...] = ()) -> dict[str, Schema]:
    """Header objects, written out (a reference cannot add `required`)."""
    return {n: {**HEADERS[n], **({"required": True} if n in required else {})} for n in names}


RESPONSES: dict[str, Schema] = {
    "NotModified": {
        "description": "the `If-None-Match` tag is still the answer's: the same headers, no body",
        "headers": _headers("ETag", "Cache-Control", "Cfgtool-Node", "Vary", required=("ETag",)),
    },
    "BadRequest": _error(
        "`bad_key`, `bad_path`, `bad_request` or `not_a_tag`: the request cannot be answered (`bad_request` also "
        "for a request the HTTP parser rejects, such as a garbage request line; the connection closes)"
    ),
    "Unauthorized": _error(
        "`unauthorized`: the server has `--tokens` and the request has no token (`this server needs a token`), or "
        "one it does not know (`unknown or revoked token`)",
        _headers("WWW-Authenticate", required=("WWW-Authenticate",)),
    ),
    "Forbidden": _error("`forbidden`: the principal may describe the key (or store) but not read it"),
    "NotFound": _error(
        "`not_found`: no such store, version, key, value or endpoint, or one the principal may not even describe, "
        "or a version whose compile reports errors (`version N cannot be served: its compile reports errors`; "
        "the errors go only to super users, in `/healthz`); a `?path=` that is not set has `did_you_mean` when a "
        "quoted path is, and `Cfgtool-Node: none` when the key has no node",
        _headers("Cfgtool-Node"),
    ),
    "Unresolved": _error("`unresolved`: the key's node did not resolve in that version"),
    "UriTooLong": _error("`key_too_long`: the key is longer than 1,024 characters"),
    "TooMany": _error(
        "`too_many_connections` (past `--max-connections`), `too_many_long_polls` (100 waiting for one principal) "
        "or `too_many_requests` (too many checks of older scrypt tokens, or too many reads of the principal's for "
        "the resolver process, wait: retry after `Retry-After`)",
        _headers("Retry-After"),
    ),
    "TooLarge": _error("`too_large`: a report of more than 4,096 bytes"),
    "RequestTimeout": _error("`request_timeout`: the request did not arrive whole within 10 s; the connection closes"),
    "HeadersTooLarge": _error("`headers_too_large`: the request line and headers are over 16 KB together"),
    "Misdirected": _error(
        "`misdirected_request`: without `--tokens` (on loopback, no proxy named, no `--public-cache`) a `Host` "
        "naming another site is refused: a page of that site pointing its name at 127.0.0.1 (DNS rebinding)"
    ),
    "Internal": _error("`E_INTERNAL` with an `id`: an unexpected exception, logged in one line under that id"),
    "Unavailable": _error(
        "`not_ready` (the store's versions are still loading), or `E_NO_ACL` (the store has no current version, "
        "with or without `--tokens`, or with `--tokens` its ACL does not load: the server never fails open), or "
        "`resolver_unavailable` (a key without a node or an explain waited 10 s for the resolver process, or its "
        "version did not load there within 300 s: retry after `Retry-After`)",
        _headers("Retry-After"),
    ),
    "Redirect": {
        "description": "`current` or `previous` names this version now: `Location` is its `versions/{N}/...` URL "
        "(query string kept), `Cfgtool-Version` its number, and the JSON body says the same",
        "headers": _headers("Location", "Cfgtool-Version", "Cache-Control", required=("Location", "Cfgtool-Version")),
        "content": {JSON: {"schema": _ref("schemas", "Redirect")}},
    },
}

# every answer can be one of these (transport limits and bugs)
ANY = {
    "400": "BadRequest",
    "408": "RequestTimeout",
    "421": "Misdirected",
    "429": "TooMany",
    "431": "HeadersTooLarge",
    "500": "Internal",
}
# every answer about a store adds these
STORE = {**ANY, "400": "BadRequest", "401": "Unauthorized", "403": "Forbidden", "404": "NotFound", "503": "Unavailable"}
# a key in the path adds 414
KEYED = {**STORE, "414": "UriTooLong"}


def _ok(description: str, schema: Schema, headers: dict[str, Schema]) -> Schema:
    return {"description": description, "headers": headers, "content": {JSON: {"schema": schema}}}


def _responses(ok: Schema, errors: dict[str, str], not_modified: bool = True) -> Schema:
    out: Schema = {"200": ok}
    if not_modified:
        out["304"] = _ref("responses", "NotModified")
    out.update({code: _ref("responses", name) for code, name in sorted(errors.items())})
    return out


def _param(name: str, where: str, description: str, schema: Schema, **more: Any) -> Schema:
    return {"name": name, "in": where, "description": description, "schema": schema, **more}


PARAMETERS: dict[str, Schema] = {
    "store": _param(
        "store",
        "path",
        "the store's name (its `_CONFIG_STORE` name, else its directory's)",
        STRING,
        required=True,
        example="demo",
    ),
    "version": _param(
        "version",
        "path",
        "a version number (1 to 9 ASCII digits without a leading zero, else 404), or `current` / `previous`, "
        "which answer a redirect to the version they name now",
        {"type": "string", "pattern": "^([1-9][0-9]{0,8}|current|previous)$"},
        required=True,
        example="1",
    ),
    "key": _param(
        "key",
        "path",
        "the key without its leading `/`, its `/` sent as they are or as `%2F` (the same key); empty for the "
        "root key `/`. At most 1,024 characters (414 beyond)",
        STRING,
        required=True,
        example="data/tracking/PageViewEvent",
    ),
    "path": _param("path", "query", "a HOCON path: answer only the value there", STRING, example="retention.days"),
    "secrets": _param(
        "secrets",
        "query",
        "`sealed`: secrets as their sealed envelopes instead of `[hidden]` (with `path` too)",
        {"enum": ["sealed"]},
    ),
    "recursive": _param(
        "recursive", "query", "`1`: follow imports transitively", {"type": "string", "enum": ["0", "1"]}
    ),
    "instance": _param(
        "instance",
        "path",
        "the instance's id, as its `Cfgtool-Instance` header: 1 to 200 visible ASCII characters but `/`, the first "
        "a letter or digit (400 `bad_instance` otherwise)",
        {"type": "string", "pattern": "^[A-Za-z0-9][!-.0-~]{0,199}$"},
        required=True,
        example="web-7:4242",
    ),
    "If-None-Match": _param("If-None-Match", "header", "an ETag of an earlier answer: 304 when it still holds", STRING),
    "Cfgtool-Instance": _param(
        "Cfgtool-Instance",
        "header",
        "the reader's instance id. While a version rolls out, `current` is what this instance reads: the candidate "
        "in its cohort, else the stable version. None, or not an instance id: a reader without an id",
        STRING,
        example="web-7:4242",
    ),
}
CONDITIONAL = _ref("parameters", "If-None-Match")


def _get(summary: str, parameters: list[str], responses: Schema, public: bool = False) -> Schema:
    op: Schema = {
        "summary": summary,
        "operationId": summary.split(":")[0],
        "parameters": [_ref("parameters", p) for p in parameters],
        "responses": responses,
    }
    if public:
        op["security"] = []
    return {"get": op}


def _query(kind: str, schema: str) -> Schema:
    parameters = ["store", "version", "key", "If-None-Match"]
    if kind == "explain":
        parameters.append("path")
    elif kind in ("imports", "imported-by"):
        parameters.append("recursive")
    responses = _responses(_ok(f"the `{kind}` query's JSON", _ref("schemas", schema), VERSION_HEADERS), KEYED)
    responses["409"] = _ref("responses", "Unresolved")
    responses["307"] = _ref("responses", "Redirect")
    op = _get(f"{kind.replace('-', '_')}: the `{kind}` query of a key in version N", parameters, responses)
    if kind == "explain":
        op["get"]["parameters"][-1] = {**PARAMETERS["path"], "required": True}  # 400 without it
    return op


VERSION_HEADERS = _headers("ETag", "Cache-Control", "Cfgtool-Node", required=("ETag", "Cache-Control"))
CURRENT_HEADERS = _headers(
    "ETag",
    "Cache-Control",
    "Cfgtool-Version",
    "Content-Location",
    "Cfgtool-Node",
    "Vary",
    required=("ETag", "Cache-Control", "Cfgtool-Version"),
)
KEY_ANSWER: Schema = {"anyOf": [_ref("schemas", "KeyConfig"), _ref("schemas", "KeyValue")]}
KEY_PARAMETERS = ["store", "key", "path", "secrets", "If-None-Match", "Cfgtool-Instance"]


def _key_responses(headers: dict[str, Schema], redirect: bool) -> Schema:
    out = _responses(_ok("the key's config, or with `?path=` the value there", KEY_ANSWER, headers), KEYED)
    out["409"] = _ref("responses", "Unresolved")
    if redirect:
        out["307"] = _ref("responses", "Redirect")
    return out


def _plain(ok: Schema, **more: Schema) -> Schema:
    """The responses of an endpoint outside the stores: `ok`, `more`, and what any answer can be."""
    return {"200": ok, **more, **{code: _ref("responses", name) for code, name in ANY.items()}}


def document() -> dict[str, Any]:
    """The OpenAPI 3.1 document of `cfgtool serve`."""
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "cfgtool serve",
            "version": "1",
            "description": "Published config versions over HTTP/JSON; see docs/serving.md and docs/security.md.",
        },
        "paths": _paths(),
        "components": {
            "schemas": SCHEMAS,
            "responses": RESPONSES,
            "parameters": PARAMETERS,
            "securitySchemes": {
                "bearer": {
                    "type": "http",
                    "scheme": "bearer",
                    "description": "a token of `cfgtool token add`, needed when the server runs with `--tokens`",
                }
            },
        },
        "security": [{"bearer": []}, {}],
    }


def _paths() -> dict[str, Schema]:
    """The paths of the API: the reads of stores, versions and keys, the queries and the change feed, then the
    rest (`_other_paths`)."""
    listed = _headers("ETag", required=("ETag",))
    stores = _ok(
        "every store: its name, path, current version and feed position",
        {"type": "array", "items": _ref("schemas", "Store")},
        _headers("ETag", "Cache-Control", "Vary", required=("ETag", "Cache-Control", "Vary")),
    )
    versions = _ok(
        "`cfgtool versions --all --format json`, each with `servable`",
        {"type": "array", "items": _ref("schemas", "Version")},
        listed,
    )
    changes = _ok(
        "the events after `since`, oldest first (none and the same `seq` when `wait` ran out)",
        _ref("schemas", "Changes"),
        _headers("Cache-Control"),
    )
    queries = zip(QUERIES, ("Tags", "Datasets", "Imports", "ImportedBy", "Explanation"), strict=True)
    paths: dict[str, Schema] = {
        "/v1/stores": _get(
            "stores: the served stores",
            ["Cfgtool-Instance"],
            _responses(stores, {**ANY, "401": "Unauthorized", "403": "Forbidden", "503": "Unavailable"}),
        ),
        "/v1/{store}/versions": _get(
            "versions: a store's versions, newest first", ["store"], _responses(versions, STORE)
        ),
        "/v1/{store}/versions/{version}/keys/{key}": _get(
            "version_key: a key's config in version N",
            ["store", "version", *KEY_PARAMETERS[1:]],
            _key_responses(VERSION_HEADERS, redirect=True),
        ),
        "/v1/{store}/current/keys/{key}": _get(
            "current_key: a key's config in the version it sees now (its freshness checkpoint)",
            KEY_PARAMETERS,
            _key_responses(CURRENT_HEADERS, redirect=False),
        ),
        **{f"/v1/{{store}}/versions/{{version}}/{kind}/{{key}}": _query(kind, schema) for kind, schema in queries},
        "/v1/{store}/changes": _get(
            "changes: the change feed, a long poll",
            ["store", "Cfgtool-Instance"],
            _responses(changes, STORE, not_modified=False),
        ),
        **_other_paths(listed),
    }
    paths["/v1/{store}/changes"]["get"]["parameters"] += [
        _param("since", "query", "the last `seq` the client handled (default 0)", INT, example=0),
        _param(
            "wait",
            "query",
            "seconds to hold the request for an event (default 30, at most 55)",
            {"type": "number", "minimum": 0, "maximum": 55},
            example=0,
        ),
    ]
    return paths


def _other_paths(listed: Schema) -> dict[str, Schema]:
    """The paths of consumers and their reports, readiness, metrics and this document."""
    health = {JSON: {"schema": _ref("schemas", "Health")}}
    return {
        "/v1/{store}/consumers": _get(
            "consumers: the client instances this server heard from, with the version each reads or applied",
            ["store"],
            _responses(
                _ok(
                    "every instance heard in the last 24 hours, most recent first",
                    _ref("schemas", "Consumers"),
                    _headers("Cache-Control"),
                ),
                STORE,
                not_modified=False,
            ),
        ),
        "/v1/{store}/rollouts": _get(
            "rollouts: every version with a staged rollout, newest first, with its cohort among this server's clients",
            ["store"],
            _responses(
                _ok(
                    "the status of each rollout (`cfgtool rollout status --format json`)",
                    {"type": "array", "items": _ref("schemas", "Rollout")},
                    _headers("Cache-Control"),
                ),
                STORE,
                not_modified=False,
            ),
        ),
        "/v1/{store}/consumers/{instance}": {
            "post": {
                "summary": "report: an instance's applied version and last attempt (an agent's, a watch's)",
                "operationId": "report",
                "parameters": [_ref("parameters", "store"), _ref("parameters", "instance")],
                "requestBody": {"required": True, "content": {JSON: {"schema": _ref("schemas", "Report")}}},
                "responses": _responses(
                    _ok(
                        "the instance as the server now knows it",
                        _ref("schemas", "Instance"),
                        _headers("Cache-Control"),
                    ),
                    {**STORE, "413": "TooLarge"},
                    not_modified=False,
                ),
            }
        },
        "/healthz": _get(
            "healthz: readiness",
            [],
            _plain(
                {"description": 'ready: `{"status"}`, with the details for a super user', "content": health},
                **{"503": {"description": "not ready yet", "content": health}},
            ),
            public=True,
        ),
        "/metrics": _get(
            "metrics: Prometheus metrics",
            [],
            _plain(
                {
                    "description": "the text exposition format; with `--tokens` (unless `--public-metrics`), only "
                    "the series of the stores the token's principal may describe",
                    "content": {"text/plain": {"schema": STRING}},
                },
                **{
                    "401": _ref("responses", "Unauthorized"),
                    "403": _ref("responses", "Forbidden"),
                    "503": _ref("responses", "Unavailable"),
                },
            ),
        ),
        "/v1/openapi.json": _get(
            "openapi: this document",
            [],
            _plain(
                _ok("the OpenAPI 3.1 document", {"type": "object"}, listed),
                **{"304": _ref("responses", "NotModified")},
            ),
            public=True,
        ),
    }


def openapi_answer() -> Answer:
    """The document as a prebuilt answer (built once per server)."""
    return answer(document())
