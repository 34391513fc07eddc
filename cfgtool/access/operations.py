"""The operations of the ACL (DESIGN 13), apart from the ACL's parser so that the CLI can name them in its help
without importing YAML and jsonschema."""

KEY_OPERATIONS = ("read", "describe", "create", "alter", "delete")
STORE_OPERATIONS = ("publish", "rollback", "alter_store", "alter_acl", "describe_acl")
OPERATIONS = (*KEY_OPERATIONS, *STORE_OPERATIONS)
STORE = "store"  # the name of the store resource in messages
