"""The rigbook hub: a recipe registry with an HTTP API, pages and a leaderboard (docs/hub.md)."""
