import { Duration } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';

export interface ReconcileQueueProps {
  queueName: string;
  deadLetterQueueName: string;
  visibilityTimeout: Duration;
  maxReceiveCount: number;
  /** The oldest-message alarm fires when a message waits longer than this. */
  ageAlarmSeconds: number;
  alarmAction?: cloudwatch.IAlarmAction;
}

/**
 * A reconcile queue as fogbridge needs it: FIFO (ordering per group), explicit deduplication ids (content
 * dedup off: the publishers set `MessageDeduplicationId`), SQS-managed encryption, TLS only, and a FIFO
 * dead-letter queue after `maxReceiveCount` receives. Two alarms: anything in the DLQ, and work that waits.
 */
export class ReconcileQueue extends Construct {
  readonly queue: sqs.Queue;
  readonly deadLetterQueue: sqs.Queue;
  readonly deadLetterAlarm: cloudwatch.Alarm;
  readonly ageAlarm: cloudwatch.Alarm;

  constructor(scope: Construct, id: string, props: ReconcileQueueProps) {
    super(scope, id);
    const common = {
      fifo: true,
      contentBasedDeduplication: false,
      encryption: sqs.QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
    } as const;

    this.deadLetterQueue = new sqs.Queue(this, 'DeadLetterQueue', {
      ...common,
      queueName: props.deadLetterQueueName,
      retentionPeriod: Duration.days(14),
    });
    this.queue = new sqs.Queue(this, 'Queue', {
      ...common,
      queueName: props.queueName,
      visibilityTimeout: props.visibilityTimeout,
      retentionPeriod: Duration.days(4),
      deadLetterQueue: { queue: this.deadLetterQueue, maxReceiveCount: props.maxReceiveCount },
    });

    this.deadLetterAlarm = new cloudwatch.Alarm(this, 'DeadLetterAlarm', {
      alarmDescription:
        `${props.deadLetterQueueName} holds messages: reconcile work failed ${props.maxReceiveCount} times. ` +
        'Fix the cause, then redrive the DLQ or POST /api/v3/services/{name}/reconcile.',
      metric: this.deadLetterQueue.metricApproximateNumberOfMessagesVisible({
        period: Duration.minutes(1),
        statistic: cloudwatch.Stats.MAXIMUM,
      }),
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
      threshold: 0,
      evaluationPeriods: 1,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    });
    this.ageAlarm = new cloudwatch.Alarm(this, 'OldestMessageAlarm', {
      alarmDescription:
        `${props.queueName} has a message older than ${props.ageAlarmSeconds} s: ` +
        'the worker is failing, throttled or not consuming.',
      metric: this.queue.metricApproximateAgeOfOldestMessage({
        period: Duration.minutes(1),
        statistic: cloudwatch.Stats.MAXIMUM,
      }),
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
      threshold: props.ageAlarmSeconds,
      evaluationPeriods: 1,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    });
    if (props.alarmAction) {
      for (const alarm of [this.deadLetterAlarm, this.ageAlarm]) {
        alarm.addAlarmAction(props.alarmAction);
        alarm.addOkAction(props.alarmAction);
      }
    }
  }
}
