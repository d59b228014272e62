"""The operator side (issue 33): operator accounts, roles, sign-in with TOTP, reports, the audit log."""
