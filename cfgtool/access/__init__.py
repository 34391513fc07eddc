"""Access control and secrets (docs/access.md#the-acl, docs/access.md#secrets): the ACL file and Kafka's authorizer for
config keys, where they are enforced, and sealed secrets with the one place that hides them."""
