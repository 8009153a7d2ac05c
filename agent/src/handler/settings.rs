//! The settings check of a job (task `CheckSettings`): the build is made or reused, then
//! its own GUC catalog and configuration parser judge the settings. A server's start judges
//! them the same way ([`AgentHandler::refuse_settings`]).

use std::path::{Path, PathBuf};

use blocklab_proto::{CheckSettingsResult, CheckSettingsTask};

use super::convert;
use super::state::AgentHandler;
use crate::conf::PgSetting;
use crate::error::AgentError;

impl AgentHandler {
    /// Judges the task's settings against the task's build.
    pub async fn check_settings(
        &self,
        task: &CheckSettingsTask,
    ) -> Result<CheckSettingsResult, AgentError> {
        let options = task
            .build
            .clone()
            .ok_or_else(|| AgentError::invalid("build", "missing build options"))?;
        let spec = convert::build_spec(&options)?;
        let build = self.cache.ensure(&spec, None).await?;
        let settings = convert::pg_settings(&task.settings);
        let problems =
            crate::guc::check(&build.prefix, &self.run_as, &self.scratch()?, &settings).await?;
        tracing::info!(
            build_key = %build.result.build_key,
            settings = settings.len(),
            refused = problems.len(),
            "settings checked"
        );
        Ok(convert::check_settings_result(
            &build.result.build_key,
            problems,
        ))
    }

    /// Fails with the settings the build at `prefix` refuses, each named with its reason.
    pub(crate) async fn refuse_settings(
        &self,
        prefix: &Path,
        settings: &[PgSetting],
    ) -> Result<(), AgentError> {
        if settings.is_empty() {
            return Ok(());
        }
        let problems = crate::guc::check(prefix, &self.run_as, &self.scratch()?, settings).await?;
        if problems.is_empty() {
            return Ok(());
        }
        let parts: Vec<String> = problems
            .iter()
            .map(|p| format!("{} = {:?}: {}", p.name, p.value, p.reason))
            .collect();
        Err(AgentError::invalid("settings", parts.join("; ")))
    }

    /// A fresh scratch directory for one check (`guc::check` creates and removes it).
    fn scratch(&self) -> Result<PathBuf, AgentError> {
        let parent = self.config.work_dir.join("settings-check");
        crate::fsutil::create_dir_0755(&parent)?;
        Ok(parent.join(uuid::Uuid::new_v4().to_string()))
    }
}
