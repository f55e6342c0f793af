"""Every actor's protocol: the closed union of messages it takes and what it tells back, one
module per actor. Nothing here imports an actor, so the pure phases of a turn can name the
messages without depending on the actors that handle them."""
