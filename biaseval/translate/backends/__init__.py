"""The translation backends, one module per provider or engine; importing the package registers
them all in ``biaseval.translate.base.TRANSLATORS``. To add one, see docs/backends.md.
"""
