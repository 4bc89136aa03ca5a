-- The teacher-task RNN and IRNN runs of a miller-hardt sweep that kept a checkpoint.
SELECT r.id FROM runs r
WHERE r.kind = 'train' AND r.status = 'completed' AND r.task = 'teacher'
  AND r.model IN ('rnn', 'irnn') AND r.checkpoint IS NOT NULL AND r.archived_at IS NULL
  AND r.config_hash IN (SELECT sp.config_hash FROM sweep_points sp
                        JOIN sweeps s ON s.id = sp.sweep_id WHERE s.name = :sweep)
ORDER BY r.id
