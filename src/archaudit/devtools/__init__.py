"""Tools for working on archaudit itself (the import-structure check)."""
