"""The local stack: real Kafka, Apicurio Registry, the Flink job and the warehouse, as native processes."""
