"""The exploration tools, one module per family: text, json, sql, notes."""
