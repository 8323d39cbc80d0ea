import test from 'ava';
import { hasJobs, JOB_QUEUES, job, jobIdProblem, jobNames } from '../shared/queue/jobs.ts';

test('job() builds the deterministic id of its queue and name from the payload', (t) => {
  const a = job('thumbnails', 'activity-thumbnail', { activityId: 7, imagePath: 'places/ab-cd/121/x1.png' });
  t.deepEqual(a, {
    queue: 'thumbnails',
    name: 'activity-thumbnail',
    payload: { activityId: 7, imagePath: 'places/ab-cd/121/x1.png' },
    jobId: 'thumb-places_ab-cd_121_x1_png',
  });
  // Same original, same job (whichever activity row asks); a new upload has a new path, hence a new job.
  t.is(job('thumbnails', 'activity-thumbnail', { activityId: 8, imagePath: 'places/ab-cd/121/x1.png' }).jobId, a.jobId);
  t.is(jobIdProblem(a.jobId), undefined);
});

test('only queues with jobs are in the map; planned ones join when their issue adds jobs', (t) => {
  t.deepEqual(JOB_QUEUES, [
    'records',
    'thumbnails',
    'recommendations',
    'exports',
    'maintenance',
    'webhooks',
    'imports',
  ]);
  t.deepEqual(jobNames('exports'), ['user-export', 'cleanup-expired']);
  t.true(hasJobs('exports'));
  t.false(hasJobs('later'));
  t.false(hasJobs('toString'));
});

test('ids BullMQ refuses are named', (t) => {
  t.is(jobIdProblem('a:b'), "contains ':'");
  t.is(jobIdProblem('123'), 'is all digits');
  t.is(jobIdProblem(''), 'is empty');
  t.is(jobIdProblem('thumb-1'), undefined);
});

test('a wrong queue, job name or payload does not compile (npm run typecheck)', (t) => {
  // Never called: each line must be a type error, or tsc reports the unused @ts-expect-error.
  const wrong = () => {
    // @ts-expect-error records has no jobs in this build
    job('records', 'compute', {});
    // @ts-expect-error no such job on thumbnails
    job('thumbnails', 'render', { activityId: 1, imagePath: 'a.png' });
    // @ts-expect-error imagePath missing
    job('thumbnails', 'activity-thumbnail', { activityId: 1 });
    // @ts-expect-error activityId is a number
    job('thumbnails', 'activity-thumbnail', { activityId: '1', imagePath: 'a.png' });
  };
  t.is(typeof wrong, 'function');
});
