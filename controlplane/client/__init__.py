"""skiff's client library (client-go's job): the API client interface,
reflector, indexed store, shared informers, workqueue, leader election."""
