-- The request rollup by class, covering: RequestSummary over all the
-- evidence folds the minutes away by reading these in order, with no sort
-- (measured on 10 M records: 3.4 s -> 0.5 s for req_stat).
CREATE INDEX req_stat_class ON req_stat (class, code, bucket, minute, n, etcd_lists, unpaged_lists, lat_sum, lat_max, apf_wait_max);
CREATE INDEX req_client_class ON req_client (class, user, minute, n);
