"""pykka actors of a run and the typed messages between them and the edge."""
