"""What runs wrote, read back: tables, exports, HTML, leaderboards, history, the CI gate."""
