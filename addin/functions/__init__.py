"""The Excel functions: the registry (each defined once), native-Excel forms and the rewriter."""
