-- AIX shared pool size and idle processors per CPU sample (schemas/cpu_sample.avsc): the Flink job
-- derives pool_used and vps_needed from them; analysts can see the pool as each LPAR saw it.
ALTER TABLE cpu_samples ADD COLUMN IF NOT EXISTS pool_cpus Nullable(Float64) AFTER virtual_cpus;
ALTER TABLE cpu_samples ADD COLUMN IF NOT EXISTS pool_idle Nullable(Float64) AFTER pool_cpus;
