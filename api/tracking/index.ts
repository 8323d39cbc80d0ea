import { TRACKING_PREFIX } from '../../shared/tracking/iri.ts';
import { ApiRouter } from '../http/route.ts';
import type { ServiceModule } from '../service-module.ts';
import { activitiesResource } from './activities.ts';
import { activityBestEffortsResource } from './activity-best-efforts.ts';
import { activityLapsResource } from './activity-laps.ts';
import { activitySimilarResource } from './activity-similar.ts';
import { activitySplitsResource } from './activity-splits.ts';
import { activityStreamsResource } from './activity-streams.ts';
import { challengesResource } from './challenges.ts';
import { deletedActivitiesResource } from './deleted-activities.ts';
import { devicesResource } from './devices.ts';
import { documentationRoutes } from './docs.ts';
import { equipmentsResource } from './equipments.ts';
import { exportsResource } from './exports.ts';
import { jobsResource } from './jobs.ts';
import { measureGoalsResource } from './measure-goals.ts';
import { measuresResource } from './measures.ts';
import { recordsResource } from './records.ts';
import { referentialResources } from './referentials.ts';
import { shareUsersResource } from './share-users.ts';
import { sharedActivitiesResource } from './shared-activities.ts';
import { sharesResource } from './shares.ts';
import { uploadRoute } from './upload.ts';
import { userStatsResource } from './user-stats.ts';
import { userSumupsResource } from './user-sumups.ts';
import { usersResource } from './users.ts';
import { webHooksResource } from './web-hooks.ts';

/** The tracking data service, JSON-LD / Hydra under /v2 (see docs/tracking.md). */
export const trackingService: ServiceModule = {
  name: 'tracking',
  errorFormat: 'hydra',
  prefixes: [TRACKING_PREFIX],
  routers: (app) => {
    const router = new ApiRouter({
      prefix: TRACKING_PREFIX,
      errorFormat: 'hydra',
      registry: app.registry,
      bodyLimitBytes: app.config.bodyLimitBytes,
      tag: 'tracking',
    });
    documentationRoutes(router, app);
    usersResource(router, app);
    referentialResources(router, app);
    devicesResource(router, app);
    activitiesResource(router, app);
    activityStreamsResource(router, app);
    activityBestEffortsResource(router, app);
    activitySimilarResource(router, app);
    activitySplitsResource(router, app);
    activityLapsResource(router, app);
    deletedActivitiesResource(router, app);
    measuresResource(router, app);
    measureGoalsResource(router, app);
    equipmentsResource(router, app);
    challengesResource(router, app);
    recordsResource(router, app);
    userSumupsResource(router, app);
    userStatsResource(router, app);
    uploadRoute(router, app);
    exportsResource(router, app);
    jobsResource(router, app);
    sharesResource(router, app);
    shareUsersResource(router, app);
    sharedActivitiesResource(router, app);
    webHooksResource(router, app);
    return [router.router];
  },
};
