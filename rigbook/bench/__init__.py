"""rigbook bench: an OpenAI streaming client that measures a server the way published numbers were measured."""
