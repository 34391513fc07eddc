"""Access control and secrets (docs/access.md#the-acl, docs/access.md#secrets). That is the ACL file, Kafka's
authorizer for config keys, and where they are enforced. And sealed secrets, with the one place that hides them."""
