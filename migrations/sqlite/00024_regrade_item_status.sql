-- The status a regrade item's new score gives its submission (graded, or
-- needs-manual while a manual cell waits), decided by scoring when the
-- item is scored; applying the regrade writes it as it is. Items scored
-- before this column existed get it from their cells, by scoring's rule.
ALTER TABLE regrade_items ADD COLUMN new_status TEXT NOT NULL DEFAULT '';
UPDATE regrade_items SET new_status = CASE
    WHEN cells LIKE '%"verdict":"needs-manual"%' THEN 'needs-manual'
    ELSE 'graded' END
  WHERE state = 'done';
