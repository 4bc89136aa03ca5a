-- What each T = 5000 run (scripts/reproduce-t5000.sh) cost and reached: its wall time (one
-- torch thread, evaluations included), seconds per step, and the step of its best validation.
SELECT r.name, r.model, r.n_params, r.steps, ROUND(r.wall_seconds / 60.0, 1) AS wall_min,
       ROUND(r.wall_seconds / r.steps, 3) AS s_per_step,
       (SELECT CAST(s.value AS INTEGER) FROM v_summaries s
        WHERE s.run_id = r.run_id AND s.key = 'best_step') AS best_step,
       r.best_valid_metric, r.test_metric
FROM v_results r
WHERE r.name IN ('indrnn-t5000', 'indrnn-t5000-64', 'lstm-t5000') AND r.status = 'completed'
ORDER BY r.name
