-- Per model, teacher λ and the λ it was held to (--stable --lam; blank: unconstrained): the
-- trained weights' spectral norm and the per-step decay of their own truncation error
-- (the newest `stress --run` of each run), lowest and highest over the seeds.
SELECT t.model,
       json_extract(t.config, '$.teacher_lam') AS teacher_lam,
       CASE WHEN json_extract(t.config, '$.stable') THEN json_extract(t.config, '$.lam') END
         AS held_to,
       COUNT(*) AS seeds,
       printf('%.2f', AVG(sn.value)) AS spectral_norm,
       printf('%.3f', MIN(d.value)) AS decay_lo,
       printf('%.3f', MAX(d.value)) AS decay_hi
FROM runs t
JOIN runs s ON s.id = (SELECT MAX(s2.id) FROM runs s2
                       WHERE s2.kind = 'stress'
                         AND json_extract(s2.config, '$.source') = 'run ' || t.id)
JOIN summaries d ON d.run_id = s.id AND d.key = 'decay_rate'
JOIN summaries sn ON sn.run_id = s.id AND sn.key = 'spectral_norm'
WHERE t.kind = 'train' AND t.task = 'teacher' AND t.archived_at IS NULL
  AND t.config_hash IN (SELECT sp.config_hash FROM sweep_points sp
                        JOIN sweeps sw ON sw.id = sp.sweep_id WHERE sw.name = :sweep)
GROUP BY 1, 2, 3
ORDER BY t.model DESC, held_to IS NOT NULL, held_to, teacher_lam
