"""Changes that commands make to a working tree on the user's behalf, such as sealing a secret in place (`secrets`).

They sit above `compile` because they check the change against the compiled store. A value is sealed only where a
schema calls it secret. They sit below `cli`, which only parses arguments and prints.
"""
