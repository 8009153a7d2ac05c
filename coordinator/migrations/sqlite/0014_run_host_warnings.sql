-- The warnings in force on a run's database host when its attempt began (a JSON array of
-- `check: value` strings, the agent's doctor warnings from its last hello); NULL when the
-- host reported none.
ALTER TABLE runs ADD COLUMN host_warnings TEXT;
