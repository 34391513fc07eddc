"""Access control and secrets (DESIGN 13, 14): the ACL file and Kafka's authorizer for config keys, where
they are enforced, and sealed secrets with the one place that hides them."""
