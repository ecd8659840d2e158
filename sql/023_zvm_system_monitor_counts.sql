-- z/VM system samples from the CP monitor: the counts whose IBM rows are quoted in
-- tests/unit/test_zvm_layouts_ibm.py (schemas/zvm_system_sample.avsc names each field's record and
-- offset). Null for sources that do not carry them (Performance Toolkit reports).
ALTER TABLE zvm_system_samples ADD COLUMN IF NOT EXISTS users_dormant Nullable(Float64) AFTER paging_dasd_rate;
ALTER TABLE zvm_system_samples ADD COLUMN IF NOT EXISTS users_in_dispatch_list Nullable(Float64) AFTER users_dormant;
ALTER TABLE zvm_system_samples ADD COLUMN IF NOT EXISTS paging_slots_total Nullable(Float64) AFTER users_in_dispatch_list;
ALTER TABLE zvm_system_samples ADD COLUMN IF NOT EXISTS paging_90pct_full_count Nullable(Float64) AFTER paging_slots_total;
ALTER TABLE zvm_system_samples ADD COLUMN IF NOT EXISTS spool_90pct_full_count Nullable(Float64) AFTER paging_90pct_full_count;
