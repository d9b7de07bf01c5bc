"""One small processor class per DSL operator; the DSL wires them, tests can use them alone."""
