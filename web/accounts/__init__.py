"""Users and roles: viewer ⊂ operator ⊂ admin, as Django groups; login required everywhere."""
