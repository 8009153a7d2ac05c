-- A finished job's dashboard page as the coordinator binary `analysis` rendered it for the
-- catalog named `catalog_path` (the page names its catalog). A coordinator's first view of the
-- page after a start reads it instead of reading every run and its traces again. A binary of
-- other code has another `analysis`: it ignores these rows and stores its own. Derived data:
-- `catalog copy` leaves it out.
CREATE TABLE job_pages (
    job_id       TEXT NOT NULL REFERENCES jobs(job_id),
    analysis     TEXT NOT NULL,
    catalog_path TEXT NOT NULL,
    page_html    TEXT NOT NULL,
    PRIMARY KEY (job_id, analysis, catalog_path)
);
