"""Command-line interface (`verdictlab ...`)."""
