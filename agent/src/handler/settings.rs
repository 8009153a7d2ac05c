//! The settings check of a job (task `CheckSettings`): the build is made or reused, then
//! its own GUC catalog and configuration parser judge the settings.

use blocklab_proto::{CheckSettingsResult, CheckSettingsTask};

use super::convert;
use super::state::AgentHandler;
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
        let scratch = self
            .config
            .work_dir
            .join("settings-check")
            .join(uuid::Uuid::new_v4().to_string());
        crate::fsutil::create_dir_0755(&self.config.work_dir.join("settings-check"))?;
        let problems = crate::guc::check(&build.prefix, &self.run_as, &scratch, &settings).await?;
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
}
