"""The warehouse: ClickHouse schema and client, the Kafka->ClickHouse sink, the SQL endpoint, Superset."""
