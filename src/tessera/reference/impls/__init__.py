"""Op implementations of the reference interpreter: one `@register_impls` class per op family.

Each class is the reference semantics of its ops (STYLE.md habit 3). They are
assembled into an interpreter by `tessera.reference.interpreter`.
"""
