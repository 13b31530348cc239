"""Adapters that put the workbench's tasks and harnesses into other training stacks (one module per stack)."""
