"""The operations of the ACL (docs/access.md#the-acl), apart from the ACL's parser. So the CLI can name them in its
help without importing YAML and jsonschema."""

KEY_OPERATIONS = ("read", "describe", "create", "alter", "delete")
# `describe` is on both: a key's existence, and the store's versions, change feed and consumers
STORE_OPERATIONS = ("describe", "publish", "rollback", "alter_store", "alter_acl", "describe_acl")
OPERATIONS = tuple(dict.fromkeys((*KEY_OPERATIONS, *STORE_OPERATIONS)))
STORE = "store"  # the name of the store resource in messages
