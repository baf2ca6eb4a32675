"""Who is asking and what they may do: verified identities and authorization."""
