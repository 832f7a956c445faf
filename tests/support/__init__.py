"""Test doubles that speak real protocols on loopback: a scripted model server and a Slack Web API stub."""
